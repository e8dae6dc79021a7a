/**
 * @module One decision on whether an upstream stream event is an error: the relay's check of a stream's first event,
 * the usage meter and the translators agree on every event, and name the same kind.
 */
import assert from "node:assert/strict";
import type { SseMessage } from "../../src/core/sse.ts";
import type { UpstreamProtocol } from "../../src/core/types.ts";
import { leadingError } from "../../src/relay/leading_error.ts";
import { readAnthropicEvent } from "../../src/protocols/anthropic.ts";
import { readChatDelta } from "../../src/protocols/chat.ts";
import { usageMeter } from "../../src/usage/meter.ts";

const CASES: { name: string; protocol: UpstreamProtocol; message: SseMessage; kind?: string }[] = [
  {
    name: "a chat error chunk",
    protocol: "openai-chat",
    message: { data: '{"error":{"message":"busy","type":"server_error","code":"rate_limit_exceeded"}}' },
    kind: "rate_limit",
  },
  {
    name: "a chat chunk with an error member after its id",
    protocol: "openai-chat",
    message: { data: '{"id":"c1","object":"chat.completion.chunk","error":{"message":"cut","type":"server_error"}}' },
    kind: "upstream",
  },
  {
    name: "a chat stream's event named error",
    protocol: "openai-chat",
    message: { event: "error", data: '{"message":"overloaded","code":"overloaded"}' },
    kind: "overloaded",
  },
  {
    name: "a chat error given as a string",
    protocol: "openai-chat",
    message: { data: '{"error":"context too long"}' },
    kind: "upstream",
  },
  {
    name: "an Anthropic error event",
    protocol: "anthropic",
    message: { event: "error", data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' },
    kind: "overloaded",
  },
  {
    name: "an Anthropic error without an event name",
    protocol: "anthropic",
    message: { data: '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}' },
    kind: "rate_limit",
  },
  {
    name: "a chat chunk whose text quotes the word error",
    protocol: "openai-chat",
    message: { data: '{"id":"c1","choices":[{"index":0,"delta":{"content":"an \\"error\\": none"}}]}' },
  },
  {
    name: "a chat chunk with a null error",
    protocol: "openai-chat",
    message: { data: '{"id":"c1","choices":[{"index":0,"delta":{"content":"ok"}}],"error":null}' },
  },
  {
    name: "an Anthropic delta about errors",
    protocol: "anthropic",
    message: {
      event: "content_block_delta",
      data: '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"error handling"}}',
    },
  },
];

const encoder = new TextEncoder();

/** The kind the translator's reader throws for `message`, or undefined when it reads it as an ordinary event. */
function translatorKind(protocol: UpstreamProtocol, message: SseMessage): string | undefined {
  try {
    if (protocol === "anthropic") readAnthropicEvent(message);
    else readChatDelta(message);
    return undefined;
  } catch (err) {
    return (err as { kind: string }).kind;
  }
}

for (const c of CASES) {
  Deno.test(`the relay, the meter and the translators agree on ${c.name}`, () => {
    const meter = usageMeter(c.protocol);
    meter.event(c.message);
    const sse = `${c.message.event ? `event: ${c.message.event}\n` : ""}data: ${c.message.data}\n\n`;
    const leading = leadingError(encoder.encode(sse), "up");
    assert.equal(meter.state() === "errored", c.kind !== undefined, "the meter");
    assert.equal(leading?.kind, c.kind, "the relay's first-event check");
    assert.equal(translatorKind(c.protocol, c.message), c.kind, "the translator");
  });
}

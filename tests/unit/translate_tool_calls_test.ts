/**
 * @module Every translation from a chat upstream hands the client tool calls the same way: ids made safe, arguments
 * that are not a JSON object wrapped as `_raw_arguments`, and the same made-up ids for calls without one, whether the
 * answer is streamed or whole.
 */
import assert from "node:assert/strict";
import type { Protocol } from "../../src/core/types.ts";
import { translateSse } from "../../src/relay/stream.ts";
import { messagesViaChat } from "../../src/translate/messages_chat_response.ts";
import type { Translator } from "../../src/translate/mod.ts";
import { responsesViaChat } from "../../src/translate/responses_chat_response.ts";
import { readAnthropicJson, readAnthropicStream, type Summary } from "../_client_readers.ts";
import { readResponsesJson, readResponsesStream } from "../_responses_reader.ts";
import { readSse } from "../_reads.ts";
import { SAMPLE_REQUESTS, testContext } from "../_translate_helpers.ts";

/** Two calls: one whose id has characters Anthropic refuses and whose arguments are not JSON, one with neither. */
const CALLS = [
  { id: "call.7:odd id", type: "function", function: { name: "get_time", arguments: "tz=UTC" } },
  { type: "function", function: { name: "get_weather", arguments: "" } },
];

const WHOLE = {
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{
    index: 0,
    message: { role: "assistant", content: null, tool_calls: CALLS },
    finish_reason: "tool_calls",
  }],
  usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
};

/** The same answer streamed, each call's arguments in two fragments. */
const STREAMED = [
  {
    choices: [{
      index: 0,
      delta: {
        role: "assistant",
        tool_calls: [{ index: 0, ...CALLS[0], function: { name: "get_time", arguments: "tz=" } }],
      },
    }],
  },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: "UTC" } }] } }] },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 1, ...CALLS[1] }] } }] },
  { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
  { choices: [], usage: WHOLE.usage },
].map((chunk) => `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", ...chunk })}\n\n`)
  .join("") + "data: [DONE]\n\n";

const CASES: {
  name: string;
  translator: Translator;
  client: Protocol;
  /** The made-up id of a call without one: from the request id, or from the Responses id when there is one. */
  madeUp: string;
  json(body: Record<string, unknown>): Summary;
  stream(events: Awaited<ReturnType<typeof readSse>>): Summary;
}[] = [
  {
    name: "Messages",
    translator: messagesViaChat,
    client: "anthropic",
    madeUp: "toolu_trace_1_a_1",
    json: readAnthropicJson,
    stream: readAnthropicStream,
  },
  {
    name: "Responses",
    translator: responsesViaChat,
    client: "openai-responses",
    madeUp: "call_5f2c9d_1",
    json: readResponsesJson,
    stream: readResponsesStream,
  },
];

for (const c of CASES) {
  Deno.test(`a ${c.name} client gets safe ids, wrapped arguments and the same ids streamed or whole`, async () => {
    // The handler gives only Responses requests a response id.
    const responseId = c.client === "openai-responses" ? "resp_5f2c9d" : undefined;
    const ctx = { ...testContext(), requestId: "trace.1:a", responseId };
    const whole = c.translator(ctx);
    whole.request(structuredClone({ ...SAMPLE_REQUESTS[c.client], stream: false }));
    const fromWhole = c.json(whole.response(structuredClone(WHOLE)));
    const streamed = c.translator(ctx);
    streamed.request(structuredClone(SAMPLE_REQUESTS[c.client]));
    const body = new Response(STREAMED).body!;
    const fromStream = c.stream(await readSse(new Response(translateSse(body, streamed.stream!(), c.client))));
    const want = [
      { id: "call_7_odd_id", name: "get_time", args: { _raw_arguments: "tz=UTC" } },
      { id: c.madeUp, name: "get_weather", args: {} },
    ];
    assert.deepEqual(fromWhole.tools, want, "whole");
    assert.deepEqual(fromStream.tools, want, "streamed");
  });
}

Deno.test("a Responses client's tool-call history reaches a chat upstream with safe ids that still pair up", () => {
  const out = responsesViaChat(testContext()).request({
    model: "public-model",
    input: [
      { type: "message", role: "user", content: "What time is it?" },
      { type: "function_call", call_id: "fc.1:x", name: "get_time", arguments: "{}" },
      { type: "function_call_output", call_id: "fc.1:x", output: "12:00" },
    ],
  });
  const messages = out.messages as Record<string, unknown>[];
  const call = (messages[1].tool_calls as { id: string }[])[0];
  assert.equal(call.id, "fc_1_x");
  assert.deepEqual(messages[2], { role: "tool", tool_call_id: "fc_1_x", content: "12:00" });
});

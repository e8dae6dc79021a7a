/**
 * @module The demo upstream's transport (`protocol: demo`, see docs/configuration.md, "The demo upstream"): it answers
 * Anthropic Messages requests itself, with no network and no key, as a Messages upstream would, streamed or not; the
 * gateway's translators give the other client protocols. Its ids come from a hash of the request, so the same request
 * gets the same answer, ids included.
 */
import { encodeSse, type SseMessage } from "../core/sse.ts";
import type { JsonObject } from "../core/types.ts";
import { type DemoAnswer, demoAnswer } from "./demo_answer.ts";
import { anthropicErrorAnswer, estimatedCount, type Transport } from "./transport.ts";

/** The words of a streamed text sent in one delta, so a client sees a stream of several pieces. */
const WORDS_PER_DELTA = 4;

/** The transport of a demo upstream: nothing to reach, no secret to keep. */
export function demoTransport(): Transport {
  return {
    async send(call) {
      if (call.operation === "count_tokens") return estimatedCount(call.body);
      if (call.operation !== "generate") {
        return anthropicErrorAnswer(404, "not_found_error", `The demo upstream does not serve ${call.operation}`);
      }
      const hash = await hashOf(call.body);
      const answer = demoAnswer(call.body, `toolu_demo_${hash.slice(24, 48)}`);
      const message = {
        id: `msg_demo_${hash.slice(0, 24)}`,
        type: "message",
        role: "assistant",
        model: call.upstreamModel,
      };
      if (call.body.stream === true) {
        const text = streamEvents(answer, message).map(encodeSse).join("");
        return new Response(text, { headers: { "content-type": "text/event-stream" } });
      }
      return Response.json({
        ...message,
        content: answer.content,
        stop_reason: answer.stop_reason,
        stop_sequence: null,
        usage: fullUsage(answer.usage),
      });
    },
    secrets: () => [],
  };
}

async function hashOf(body: JsonObject): Promise<string> {
  const bytes = new TextEncoder().encode(JSON.stringify([body.system, body.messages, body.tools]));
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
}

function fullUsage(usage: DemoAnswer["usage"]): JsonObject {
  return { ...usage, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

function event(type: string, payload: JsonObject): SseMessage {
  return { event: type, data: JSON.stringify({ type, ...payload }) };
}

/** The answer as a Messages stream: the events an Anthropic upstream sends, in its order (docs/protocols.md). */
export function streamEvents(answer: DemoAnswer, message: JsonObject): SseMessage[] {
  const start = {
    ...message,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: fullUsage({ input_tokens: answer.usage.input_tokens, output_tokens: 1 }),
  };
  const events = [event("message_start", { message: start }), event("ping", {})];
  answer.content.forEach((block, index) => {
    if (block.type === "text") {
      events.push(event("content_block_start", { index, content_block: { type: "text", text: "" } }));
      for (const piece of pieces(block.text)) {
        events.push(event("content_block_delta", { index, delta: { type: "text_delta", text: piece } }));
      }
    } else {
      const head = { type: "tool_use", id: block.id, name: block.name, input: {} };
      events.push(event("content_block_start", { index, content_block: head }));
      const json = JSON.stringify(block.input);
      const half = Math.ceil(json.length / 2);
      for (const partial of [json.slice(0, half), json.slice(half)]) {
        events.push(
          event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: partial } }),
        );
      }
    }
    events.push(event("content_block_stop", { index }));
  });
  events.push(event("message_delta", {
    delta: { stop_reason: answer.stop_reason, stop_sequence: null },
    usage: { output_tokens: answer.usage.output_tokens },
  }));
  events.push(event("message_stop", {}));
  return events;
}

/** A text cut into deltas of a few words each, every space kept. */
function pieces(text: string): string[] {
  const words = text.match(/\S+\s*/g) ?? [text];
  const out: string[] = [];
  for (let i = 0; i < words.length; i += WORDS_PER_DELTA) out.push(words.slice(i, i + WORDS_PER_DELTA).join(""));
  return out.length > 0 ? out : [""];
}

/**
 * @module A model scripted turn by turn behind the fake upstream: each request gets the next turn (thinking, text and a
 * tool call at once), as an Anthropic message or a chat completion, whole or streamed as the request asks.
 */
import type { Responder } from "./_fake_upstream.ts";
import { sse } from "./_scripted_model.ts";

/** One answer of the model. */
export interface Turn {
  thinking?: string;
  text?: string;
  call?: { id: string; name: string; args: Record<string, unknown> };
}

/** The upstream kinds a model can sit behind, with the test config's model and upstream path for each. */
export const KINDS = [
  { kind: "anthropic", model: "claude-test", path: "POST /anth/v1/messages" },
  { kind: "openai", model: "gpt-test", path: "POST /oai/v1/chat/completions" },
] as const;

/** An upstream kind. */
export type Kind = typeof KINDS[number]["kind"];

/** Input tokens as the upstream would count them: the size of what it was sent. */
function promptTokens(body: Record<string, unknown>): number {
  return Math.ceil(JSON.stringify(body.messages ?? []).length / 4);
}

function anthropicAnswer(turn: Turn, body: Record<string, unknown>, n: number): Response {
  const content: Record<string, unknown>[] = [];
  if (turn.thinking) content.push({ type: "thinking", thinking: turn.thinking, signature: `sig-${n}` });
  if (turn.text) content.push({ type: "text", text: turn.text });
  if (turn.call) content.push({ type: "tool_use", id: turn.call.id, name: turn.call.name, input: turn.call.args });
  const stop = turn.call ? "tool_use" : "end_turn";
  const usage = { input_tokens: promptTokens(body), output_tokens: 7, cache_creation_input_tokens: 0 };
  const message = { id: `msg_up${n}`, type: "message", role: "assistant", model: "claude-test", stop_sequence: null };
  if (!body.stream) return Response.json({ ...message, content, stop_reason: stop, usage });
  const events: Record<string, unknown>[] = [{
    type: "message_start",
    message: { ...message, content: [], stop_reason: null, usage },
  }];
  content.forEach((block, index) => {
    const start: Record<string, unknown> = { ...block, [block.type === "tool_use" ? "input" : String(block.type)]: "" };
    if (block.type === "tool_use") start.input = {};
    if (block.type === "thinking") delete start.signature;
    events.push({ type: "content_block_start", index, content_block: start });
    const delta = block.type === "text"
      ? { type: "text_delta", text: block.text }
      : block.type === "thinking"
      ? { type: "thinking_delta", thinking: block.thinking }
      : { type: "input_json_delta", partial_json: JSON.stringify(block.input) };
    events.push({ type: "content_block_delta", index, delta });
    if (block.type === "thinking") {
      events.push({
        type: "content_block_delta",
        index,
        delta: { type: "signature_delta", signature: block.signature },
      });
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push({
    type: "message_delta",
    delta: { stop_reason: stop, stop_sequence: null },
    usage: { output_tokens: 7 },
  });
  events.push({ type: "message_stop" });
  return sse(events, true);
}

function chatAnswer(turn: Turn, body: Record<string, unknown>, n: number): Response {
  const calls = turn.call
    ? [{
      id: turn.call.id,
      type: "function",
      function: { name: turn.call.name, arguments: JSON.stringify(turn.call.args) },
    }]
    : undefined;
  const finish = turn.call ? "tool_calls" : "stop";
  const usage = { prompt_tokens: promptTokens(body), completion_tokens: 7, total_tokens: promptTokens(body) + 7 };
  const base = { id: `chatcmpl-${n}`, created: 1767225600, model: "gpt-test" };
  if (!body.stream) {
    const message = {
      role: "assistant",
      content: turn.text ?? null,
      reasoning_content: turn.thinking,
      tool_calls: calls,
    };
    return Response.json({
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: finish }],
      usage,
    });
  }
  const chunk = (delta: unknown, finishReason: string | null = null) => ({
    ...base,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const events: Record<string, unknown>[] = [chunk({ role: "assistant", content: "" })];
  if (turn.thinking) events.push(chunk({ reasoning_content: turn.thinking }));
  if (turn.text) events.push(chunk({ content: turn.text }));
  if (calls) events.push(chunk({ tool_calls: [{ index: 0, ...calls[0] }] }));
  events.push(chunk({}, finish), { ...base, object: "chat.completion.chunk", choices: [], usage });
  return sse(events, false);
}

/** Answers each request with the next of `turns` (the last one again once they run out). */
export function scripted(kind: Kind, turns: Turn[]): Responder {
  let n = 0;
  return (seen) => {
    const turn = turns[Math.min(n, turns.length - 1)];
    n++;
    return kind === "anthropic" ? anthropicAnswer(turn, seen.body!, n) : chatAnswer(turn, seen.body!, n);
  };
}

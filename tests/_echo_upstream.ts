/**
 * @module A fake Anthropic and OpenAI chat upstream that answers with what it received: the last user turn's text
 * echoed back (after a key the client never sent, when the turn says "leak"), as text or, when it says "tool", as a
 * tool call's arguments; streamed in deltas of a few characters whose bytes go out a few at a time, so anything the
 * gateway must catch is split across events and reads.
 */
import type { FakeUpstream, SeenRequest } from "./_fake_upstream.ts";

/** The key the upstream "leaks" into its answer when asked to. */
export const LEAKED_KEY = "AKIAXLNXB4EI6OCLOY6V";
const DELTA_CHARS = 4;
const READ_BYTES = 5;

/** The text of the last user turn, whatever the protocol's shape. */
function lastUserText(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: unknown }[];
  const last = messages.filter((m) => m.role === "user").at(-1)!;
  if (typeof last.content === "string") return last.content;
  return (last.content as { type: string; text?: string; content?: unknown }[])
    .map((block) => block.text ?? (typeof block.content === "string" ? block.content : ""))
    .join("");
}

/** What the upstream answers for `seen`. */
export function echoOf(seen: SeenRequest): { text: string; tool: boolean } {
  const heard = lastUserText(seen.body!);
  // The leaked key comes first, so what the client sent (a placeholder, say) ends the answer.
  return { text: `I read: ${heard.includes("leak") ? `${LEAKED_KEY} ` : ""}${heard}`, tool: heard.includes("tool") };
}

function pieces(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += DELTA_CHARS) out.push(text.slice(i, i + DELTA_CHARS));
  return out;
}

/** An SSE body sent a few bytes at a time. */
function trickle(events: string): Response {
  const bytes = new TextEncoder().encode(events);
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at += READ_BYTES));
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

const sse = (event: string | undefined, data: unknown) =>
  `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
const USAGE = { input_tokens: 5, output_tokens: 7 };

function anthropic(seen: SeenRequest): Response {
  const { text, tool } = echoOf(seen);
  const args = JSON.stringify({ content: text });
  const block = tool ? { type: "tool_use", id: "toolu_1", name: "write", input: {} } : { type: "text", text: "" };
  if (seen.body!.stream !== true) {
    const content = tool ? [{ ...block, input: { content: text } }] : [{ type: "text", text }];
    return Response.json({
      id: "msg_echo",
      type: "message",
      role: "assistant",
      model: seen.body!.model,
      content,
      stop_reason: tool ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: USAGE,
    });
  }
  let events = sse("message_start", {
    type: "message_start",
    message: {
      id: "msg_echo",
      type: "message",
      role: "assistant",
      model: seen.body!.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 0 },
    },
  });
  events += sse("content_block_start", { type: "content_block_start", index: 0, content_block: block });
  for (const piece of pieces(tool ? args : text)) {
    const delta = tool ? { type: "input_json_delta", partial_json: piece } : { type: "text_delta", text: piece };
    events += sse("content_block_delta", { type: "content_block_delta", index: 0, delta });
  }
  events += sse("content_block_stop", { type: "content_block_stop", index: 0 });
  events += sse("message_delta", {
    type: "message_delta",
    delta: { stop_reason: tool ? "tool_use" : "end_turn", stop_sequence: null },
    usage: { output_tokens: 7 },
  });
  events += sse("message_stop", { type: "message_stop" });
  return trickle(events);
}

function chat(seen: SeenRequest): Response {
  const { text, tool } = echoOf(seen);
  const args = JSON.stringify({ content: text });
  const base = { id: "chatcmpl-echo", object: "chat.completion.chunk", created: 1, model: seen.body!.model };
  const usage = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 };
  if (seen.body!.stream !== true) {
    const message = tool
      ? {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "write", arguments: args } }],
      }
      : { role: "assistant", content: text };
    return Response.json({
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: tool ? "tool_calls" : "stop" }],
      usage,
    });
  }
  // As OpenAI does, the first chunk names the role.
  let events = tool ? "" : sse(undefined, {
    ...base,
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
  });
  if (tool) {
    events += sse(undefined, {
      ...base,
      choices: [{
        index: 0,
        delta: {
          role: "assistant",
          tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "write", arguments: "" } }],
        },
        finish_reason: null,
      }],
    });
  }
  for (const piece of pieces(tool ? args : text)) {
    const delta = tool ? { tool_calls: [{ index: 0, function: { arguments: piece } }] } : { content: piece };
    events += sse(undefined, { ...base, choices: [{ index: 0, delta, finish_reason: null }] });
  }
  events += sse(undefined, {
    ...base,
    choices: [{ index: 0, delta: {}, finish_reason: tool ? "tool_calls" : "stop" }],
  });
  events += sse(undefined, { ...base, choices: [], usage });
  events += "data: [DONE]\n\n";
  return trickle(events);
}

/** Makes `upstream` answer the test config's Anthropic and OpenAI upstreams with echoes. */
export function echoing(upstream: FakeUpstream): void {
  upstream.routes.set("POST /anth/v1/messages", anthropic);
  upstream.routes.set("POST /oai/v1/chat/completions", chat);
}

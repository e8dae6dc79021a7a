/**
 * @module The benchmark's upstream: a process that answers Anthropic `POST /v1/messages` and OpenAI
 * `POST /v1/chat/completions` with fixed bodies, or a fixed SSE stream when the request asks for one, doing as
 * little work per request as it can so that it is never the bottleneck being measured.
 */

const encoder = new TextEncoder();

/** Whether `needle` occurs in `haystack`; a byte search, so the body is never decoded or parsed. */
export function containsBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  if (needle.length === 0) return true;
  const first = needle[0];
  const last = haystack.length - needle.length;
  outer: for (let i = haystack.indexOf(first); i !== -1 && i <= last; i = haystack.indexOf(first, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** The marker of a streamed request as the gateway and the load generator serialize it (compact JSON). */
export const STREAM_MARKER = encoder.encode('"stream":true');

const TEXT = ["The", " quick", " brown", " fox", " jumps", " over", " the", " dog."];

function sse(event: string | undefined, data: unknown): string {
  return `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

/** The Anthropic stream: 14 events, one chunk each. */
export function anthropicEvents(): string[] {
  const usage = { input_tokens: 12, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const message = {
    id: "msg_bench",
    type: "message",
    role: "assistant",
    model: "bench-claude",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage,
  };
  return [
    sse("message_start", { type: "message_start", message }),
    sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    sse("ping", { type: "ping" }),
    ...TEXT.map((text) =>
      sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })
    ),
    sse("content_block_stop", { type: "content_block_stop", index: 0 }),
    sse("message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: TEXT.length },
    }),
    sse("message_stop", { type: "message_stop" }),
  ];
}

/** The OpenAI Chat Completions stream: 12 chunks ending in `[DONE]`. */
export function openaiEvents(): string[] {
  const base = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: "bench-gpt" };
  const chunk = (delta: unknown, finish: string | null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return [
    sse(undefined, chunk({ role: "assistant", content: "" }, null)),
    ...TEXT.map((content) => sse(undefined, chunk({ content }, null))),
    sse(undefined, chunk({}, "stop")),
    sse(undefined, { ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 } }),
    sse(undefined, "[DONE]"),
  ];
}

const ANTHROPIC_MESSAGE = JSON.stringify({
  id: "msg_bench",
  type: "message",
  role: "assistant",
  model: "bench-claude",
  content: [{ type: "text", text: TEXT.join("") }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
});

const OPENAI_COMPLETION = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "bench-gpt",
  choices: [{ index: 0, message: { role: "assistant", content: TEXT.join("") }, finish_reason: "stop" }],
  usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 },
});

const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

/**
 * One chunk per event, handed out on each pull, so a stream reaches the gateway as several reads the way a
 * real upstream's does instead of as one buffer.
 */
function eventStream(chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(chunks[next++]);
      if (next === chunks.length) controller.close();
    },
  });
}

/** The fixed answers, encoded once. */
function answers() {
  return {
    anthropic: { body: encoder.encode(ANTHROPIC_MESSAGE), events: anthropicEvents().map((e) => encoder.encode(e)) },
    openai: { body: encoder.encode(OPENAI_COMPLETION), events: openaiEvents().map((e) => encoder.encode(e)) },
  };
}

/** The request handler: routing by path suffix and a byte search, nothing parsed. */
export function createFakeUpstream(): (req: Request) => Promise<Response> {
  const fixed = answers();
  return async function handle(req: Request): Promise<Response> {
    const path = req.url.slice(req.url.indexOf("/", 8)).split("?")[0];
    const answer = req.method !== "POST"
      ? undefined
      : path === "/v1/messages"
      ? fixed.anthropic
      : path === "/v1/chat/completions"
      ? fixed.openai
      : undefined;
    if (!answer) {
      await req.body?.cancel();
      return new Response(`{"error":{"type":"not_found_error","message":"Unknown path"}}`, {
        status: 404,
        headers: JSON_HEADERS,
      });
    }
    const body = await req.bytes();
    if (containsBytes(body, STREAM_MARKER)) return new Response(eventStream(answer.events), { headers: SSE_HEADERS });
    return new Response(answer.body, { headers: JSON_HEADERS });
  };
}

if (import.meta.main) {
  const port = Number(Deno.args[0] ?? 0);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port, onListen: ({ port }) => console.log(JSON.stringify({ listening: port })) },
    createFakeUpstream(),
  );
  const stop = () => server.shutdown();
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
  await server.finished;
}

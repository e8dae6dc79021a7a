/**
 * @module The benchmark's upstream: a process that answers Anthropic `POST /v1/messages`, OpenAI
 * `POST /v1/chat/completions`, `POST /v1/responses` and `POST /v1/embeddings` with fixed bodies, or a fixed SSE stream when the request asks for one, doing as
 * little work per request as it can so that it is never the bottleneck being measured. Two models stream
 * differently: a long answer of about 2,000 events as fast as it can, and a short one paced like a real model.
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

/** Where the fake upstream tells how many request-body bytes it has received so far. */
export const STATS_PATH = "/__stats";

/** The marker of a streamed request as the gateway and the load generator serialize it (compact JSON). */
export const STREAM_MARKER = encoder.encode('"stream":true');

/** Model ids whose streams differ: a long answer sent at once, and an answer paced the way a model streams. */
export const LONG_MODEL = "bench-claude-long";
export const PACED_MODEL = "bench-claude-paced";
const LONG_MARKER = encoder.encode(`"${LONG_MODEL}"`);
const PACED_MARKER = encoder.encode(`"${PACED_MODEL}"`);

/**
 * The model whose streamed answer is as large as the request asks: `answer_mb:N` anywhere in the body gives N MB of
 * text in deltas of {@linkcode LARGE_DELTA_BYTES}, made as they are read (bench:bodies' large answers).
 */
export const LARGE_MODEL = "bench-claude-large";
const LARGE_MARKER = encoder.encode(`"${LARGE_MODEL}"`);
const ANSWER_MB_MARKER = encoder.encode("answer_mb:");
export const LARGE_DELTA_BYTES = 16 * 1024;

/** Events of the long stream (a long Claude Code answer). */
export const LONG_EVENTS = 2000;
/** Events of a paced stream, and the pause before each after the first, in milliseconds. */
export const PACED_EVENTS = 60;
export const PACED_GAP_MS = { min: 50, max: 100 };

const TEXT = ["The", " quick", " brown", " fox", " jumps", " over", " the", " dog."];

function sse(event: string | undefined, data: unknown): string {
  return `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

/** The Anthropic stream: 14 events by default (8 text deltas), one chunk each. */
export function anthropicEvents(deltas = TEXT.length): string[] {
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
    ...Array.from({ length: deltas }, (_, i) =>
      sse("content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: TEXT[i % TEXT.length] },
      })),
    sse("content_block_stop", { type: "content_block_stop", index: 0 }),
    sse("message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: deltas },
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

/** The Responses answer: the non-streamed body, and the response of the stream's `response.completed`. */
const RESPONSES_RESPONSE = {
  id: "resp_bench",
  object: "response",
  created_at: 1_700_000_000,
  status: "completed",
  model: "bench-codex",
  output: [{
    type: "message",
    id: "msg_bench",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: TEXT.join(""), annotations: [] }],
  }],
  usage: {
    input_tokens: 12,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 8,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 20,
  },
  error: null,
  incomplete_details: null,
};

const RESPONSES_ANSWER = JSON.stringify(RESPONSES_RESPONSE);

/**
 * The Responses stream of the same answer: 16 events (8 text deltas), as OpenAI sends them (each with its sequence
 * number).
 */
export function responsesEvents(): string[] {
  const { id, object, created_at, model, error, incomplete_details, output: [done] } = RESPONSES_RESPONSE;
  // The response before the answer: its fields, in the order these events carry them, and none of its output.
  const base = { id, object, created_at, model, error, incomplete_details };
  const pending = { ...base, status: "in_progress", output: [], usage: null };
  const item = { ...done, status: "in_progress", content: [] };
  const [part] = done.content;
  const at = { item_id: done.id, output_index: 0, content_index: 0 };
  let n = 0;
  const event = (type: string, fields: Record<string, unknown>) => sse(type, { type, ...fields, sequence_number: n++ });
  return [
    event("response.created", { response: pending }),
    event("response.in_progress", { response: pending }),
    event("response.output_item.added", { output_index: 0, item }),
    event("response.content_part.added", { ...at, part: { ...part, text: "" } }),
    ...TEXT.map((delta) => event("response.output_text.delta", { ...at, delta, logprobs: [] })),
    event("response.output_text.done", { ...at, text: part.text, logprobs: [] }),
    event("response.content_part.done", { ...at, part }),
    event("response.output_item.done", { output_index: 0, item: done }),
    event("response.completed", { response: RESPONSES_RESPONSE }),
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

/** Inputs of the embeddings case, and the length of each vector (text-embedding-3-small's). */
export const EMBED_INPUTS = 16;
const EMBED_DIMENSIONS = 1536;

/** An OpenAI embeddings answer of {@linkcode EMBED_INPUTS} vectors in base64, as the SDKs ask for them by default. */
function embeddingsAnswer(): string {
  const bytes = new Uint8Array(EMBED_DIMENSIONS * 4);
  const view = new DataView(bytes.buffer);
  const data = Array.from({ length: EMBED_INPUTS }, (_, index) => {
    for (let i = 0; i < EMBED_DIMENSIONS; i++) view.setFloat32(i * 4, Math.sin(index * 31 + i) / 8, true);
    return { object: "embedding", index, embedding: bytes.toBase64() };
  });
  const usage = { prompt_tokens: EMBED_INPUTS * 12, total_tokens: EMBED_INPUTS * 12 };
  return JSON.stringify({ object: "list", data, model: "text-embedding-3-small", usage });
}
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

/**
 * One chunk per event with a pause of `gap()` ms before each after the first, as a model streams its tokens; a
 * client that leaves stops the timer.
 */
function pacedStream(chunks: readonly Uint8Array[], gap: () => number): ReadableStream<Uint8Array> {
  let next = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next === 0) {
        controller.enqueue(chunks[next++]);
        return;
      }
      return new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          controller.enqueue(chunks[next++]);
          if (next === chunks.length) controller.close();
          resolve();
        }, gap());
      });
    },
    cancel() {
      clearTimeout(timer);
    },
  }, { highWaterMark: 0 });
}

const encodeAll = (events: string[]) => events.map((e) => encoder.encode(e));

/** The megabytes `answer_mb:N` in a body asks for, or 1. */
function answerMb(body: Uint8Array): number {
  const marker = ANSWER_MB_MARKER;
  for (let i = body.indexOf(marker[0]); i !== -1; i = body.indexOf(marker[0], i + 1)) {
    if (!marker.every((byte, j) => body[i + j] === byte)) continue;
    let mb = 0;
    for (let at = i + marker.length; body[at] >= 48 && body[at] <= 57; at++) mb = mb * 10 + body[at] - 48;
    return Math.max(1, mb);
  }
  return 1;
}

/** An Anthropic stream of `mb` MB of text, each delta made when the gateway reads it, so the fake holds one. */
function largeStream(mb: number): ReadableStream<Uint8Array> {
  const [start, block, , delta, stop, end, last] = anthropicEvents(1);
  const text = "lorem ipsum dolor sit amet ".repeat(LARGE_DELTA_BYTES).slice(0, LARGE_DELTA_BYTES);
  const bigDelta = encoder.encode(delta.replace('"text":"The"', `"text":"${text}"`));
  const deltas = Math.ceil((mb * 1024 * 1024) / LARGE_DELTA_BYTES);
  const head = encodeAll([start, block]);
  const tail = encodeAll([stop, end.replace(/"output_tokens":\d+/, `"output_tokens":${deltas * 4096}`), last]);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const at = sent++;
      if (at < head.length) return controller.enqueue(head[at]);
      if (at < head.length + deltas) return controller.enqueue(bigDelta);
      controller.enqueue(tail[at - head.length - deltas]);
      if (at === head.length + deltas + tail.length - 1) controller.close();
    },
  }, { highWaterMark: 0 });
}

/** The fixed answers, encoded once. */
function answers() {
  return {
    anthropic: { body: encoder.encode(ANTHROPIC_MESSAGE), events: encodeAll(anthropicEvents()) },
    openai: { body: encoder.encode(OPENAI_COMPLETION), events: encodeAll(openaiEvents()) },
    responses: { body: encoder.encode(RESPONSES_ANSWER), events: encodeAll(responsesEvents()) },
    embeddings: { body: encoder.encode(embeddingsAnswer()), events: [] },
    long: encodeAll(anthropicEvents(LONG_EVENTS - 6)),
    paced: encodeAll(anthropicEvents(PACED_EVENTS - 6)),
  };
}

/** A pause drawn evenly from the paced range. */
function pacedGap(): number {
  return PACED_GAP_MS.min + Math.random() * (PACED_GAP_MS.max - PACED_GAP_MS.min);
}

/**
 * The request handler: routing by path suffix and a byte search, nothing parsed. `pacedGapMs` draws the pause
 * before each paced event (evenly from the paced range by default).
 */
export function createFakeUpstream(
  options: { pacedGapMs?: () => number } = {},
): (req: Request) => Promise<Response> {
  const fixed = answers();
  const gap = options.pacedGapMs ?? pacedGap;
  // What the gateway sent, for cases that compare how much reaches the upstream (the tool loop).
  let received = 0;
  return async function handle(req: Request): Promise<Response> {
    const path = req.url.slice(req.url.indexOf("/", 8)).split("?")[0];
    if (req.method === "GET" && path === STATS_PATH) return Response.json({ received_bytes: received });
    const answer = req.method !== "POST"
      ? undefined
      : path === "/v1/messages"
      ? fixed.anthropic
      : path === "/v1/chat/completions"
      ? fixed.openai
      : path === "/v1/responses"
      ? fixed.responses
      : path === "/v1/embeddings"
      ? fixed.embeddings
      : undefined;
    if (!answer) {
      await req.body?.cancel();
      return new Response(`{"error":{"type":"not_found_error","message":"Unknown path"}}`, {
        status: 404,
        headers: JSON_HEADERS,
      });
    }
    const body = await req.bytes();
    received += body.byteLength;
    if (containsBytes(body, STREAM_MARKER)) {
      const stream = answer !== fixed.anthropic
        ? eventStream(answer.events)
        : containsBytes(body, LARGE_MARKER)
        ? largeStream(answerMb(body))
        : containsBytes(body, LONG_MARKER)
        ? eventStream(fixed.long)
        : containsBytes(body, PACED_MARKER)
        ? pacedStream(fixed.paced, gap)
        : eventStream(answer.events);
      return new Response(stream, { headers: SSE_HEADERS });
    }
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

/**
 * @module `deno task bench:redact`: what keeping the upstream's secrets out of a stream costs per streamed MB. The
 * byte redactor alone, and a stream through the relay (with its usage meter), passed through and translated for a chat
 * client (whose written events are searched again), without and with the upstream's key, in interleaved rounds in one
 * process, so the difference is the check's own cost.
 */
import { byteRedactor } from "../src/core/byte_redact.ts";
import type { StreamStep } from "../src/core/sse.ts";
import { relayStream } from "../src/relay/stream.ts";
import { pickTranslator } from "../src/translate/mod.ts";
import { usageMeter } from "../src/usage/meter.ts";
import { median } from "./report.ts";

const MB = 1024 * 1024;
const encoder = new TextEncoder();

/** A key shaped like an Anthropic key (108 characters), and a service-account key and token as Vertex has them. */
const KEY = "sk-ant-api03-" + "Qx7vN2mK9pL4wR8tY1uE5iO3aS6dF0gH".repeat(3).slice(0, 95);
const VERTEX = [
  `-----BEGIN PRIVATE KEY-----\n${"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC".repeat(52)}\n-----END PRIVATE KEY-----\n`,
  "ya29." + "a0AfB_byC3dE4fG5hI6jK7lM8nO9pQ0rS1tU2vW3xY4z".repeat(5),
];
const WORDS = "the gateway streams each token of the answer as it comes, so the client sees text at once; ";

/** One text delta event as an Anthropic upstream sends it (about 150 bytes). */
function delta(i: number): string {
  const text = WORDS.slice(i % 40, (i % 40) + 40);
  return `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,` +
    `"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}\n\n`;
}

/** `mb` megabytes of a long Messages stream, one event per chunk (a model's pace) or in `chunkBytes` pieces. */
function streamChunks(mb: number, chunkBytes?: number): Uint8Array[] {
  const events: Uint8Array[] = [];
  let size = 0;
  for (let i = 0; size < mb * MB; i++) {
    const bytes = encoder.encode(delta(i));
    events.push(bytes);
    size += bytes.length;
  }
  if (!chunkBytes) return events;
  const whole = new Uint8Array(size);
  let offset = 0;
  for (const event of events) {
    whole.set(event, offset);
    offset += event.length;
  }
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < size; at += chunkBytes) chunks.push(whole.slice(at, at + chunkBytes));
  return chunks;
}

/** Microseconds per MB for the redactor alone over `chunks`. */
function redactorOnly(chunks: Uint8Array[], secrets: string[], mb: number): number {
  const redactor = byteRedactor(secrets)!;
  const start = performance.now();
  let out = 0;
  for (const chunk of chunks) out += redactor.push(chunk).length;
  const us = (performance.now() - start) * 1000;
  if (out === 0) throw new Error("nothing went through");
  return us / mb;
}

/** The Anthropic-to-chat translation a chat client's stream goes through. */
function chatStep(): StreamStep {
  const context = {
    model: "m",
    upstreamModel: "m",
    requestId: "req_bench",
    now: Date.now,
    log() {},
    defaultMaxTokens: 64,
  };
  const translation = pickTranslator("openai-chat", "anthropic")!(context);
  translation.request({ model: "m", stream: true, messages: [{ role: "user", content: "Hi" }] });
  return translation.stream!();
}

/** The stream's first and last events, around its deltas, for a translator that needs a whole message. */
const OPEN = encoder.encode(
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",' +
    '"model":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}\n\nevent: content_block_start\n' +
    'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
);
const CLOSE = encoder.encode(
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\nevent: message_delta\ndata: ' +
    '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}\n\n' +
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
);

/**
 * Microseconds per MB for a stream of `chunks` through the relay, with `secrets` as the upstream's: passed through,
 * or translated for a chat client when `step` is given.
 */
async function relayed(chunks: Uint8Array[], secrets: string[], mb: number, step?: StreamStep): Promise<number> {
  if (step) chunks = [OPEN, ...chunks, CLOSE];
  let i = 0;
  const reader = {
    read: () =>
      Promise.resolve(
        i < chunks.length ? { done: false as const, value: chunks[i++] } : { done: true as const, value: undefined },
      ),
    cancel: () => Promise.resolve(),
  };
  const start = performance.now();
  const body = relayStream(reader, new Uint8Array(0), {
    protocol: step ? "openai-chat" : "anthropic",
    step,
    meter: usageMeter("anthropic"),
    upstream: new AbortController(),
    upstreamName: "bench",
    secrets,
    onFirstByte() {},
    onEnd() {},
  });
  const client = body.getReader();
  while (!(await client.read()).done) {
    // The client only takes the bytes.
  }
  return (performance.now() - start) * 1000 / mb;
}

/** Runs the cases in turn, `rounds` times over, and prints the median and range of each. */
async function main(args: string[]): Promise<void> {
  const mb = Number(args[args.indexOf("--mb") + 1]) || 16;
  const rounds = Number(args[args.indexOf("--rounds") + 1]) || 9;
  const perEvent = streamChunks(mb);
  const pieces = streamChunks(mb, 16 * 1024);
  const cases: [string, () => number | Promise<number>][] = [
    ["redactor alone, one key, one event per chunk", () => redactorOnly(perEvent, [KEY], mb)],
    ["redactor alone, one key, 16 KiB chunks", () => redactorOnly(pieces, [KEY], mb)],
    ["redactor alone, Vertex key file and token, one event per chunk", () => redactorOnly(perEvent, VERTEX, mb)],
    ["relay passthrough, no secret, one event per chunk", () => relayed(perEvent, [], mb)],
    ["relay passthrough, one key, one event per chunk", () => relayed(perEvent, [KEY], mb)],
    ["relay translated for chat, no secret, one event per chunk", () => relayed(perEvent, [], mb, chatStep())],
    ["relay translated for chat, one key, one event per chunk", () => relayed(perEvent, [KEY], mb, chatStep())],
  ];
  const results = new Map<string, number[]>(cases.map(([name]) => [name, []]));
  // A warm-up round, not counted, so every case runs optimised code.
  for (const [, run] of cases) await run();
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of cases) results.get(name)!.push(await run());
  }
  console.log(`${mb} MB per run, ${perEvent.length} events, ${rounds} interleaved rounds; microseconds per MB`);
  for (const [name, values] of results) {
    const line = `${median(values).toFixed(0)} (${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)})`;
    console.log(`${name.padEnd(66)} ${line}`);
  }
}

if (import.meta.main) await main(Deno.args);

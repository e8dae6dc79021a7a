/**
 * @module `deno task bench:guardrails`: what the guardrails (the `secrets` and `pii` rules on input and output) cost
 * per request in one process, in interleaved rounds: the request body of the main bench's guardrails cases scanned on
 * input, and the main bench's Messages stream read through the guardrails against the same stream read as it is,
 * so the difference is the rules' own work. `deno task bench` measures the whole gateway's CPU with and without.
 */
import { guardBook } from "../src/core/guard_book.ts";
import { guardValue } from "../src/core/guard_walk.ts";
import type { GuardRun } from "../src/core/text_scan.ts";
import { guardStream } from "../src/relay/guard_stream.ts";
import { anthropicEvents } from "./fake_upstream.ts";
import { median } from "./report.ts";
import { CODE_TURN } from "./setup.ts";

const encoder = new TextEncoder();
const book = guardBook([
  { name: "secrets", detect: ["secrets"], scope: ["input", "output"], action: "mask", restore: true },
  { name: "pii", detect: ["pii"], scope: ["input", "output"], action: "mask", restore: false },
], [{ name: "bench", guardrails: ["secrets", "pii"] }]);
const policy = book.get("bench")!;
const newRun = (): GuardRun => ({ hits: [], restores: new Map(), tag: () => "0a1b2c" });
const body = { model: "bench-claude", max_tokens: 64, messages: CODE_TURN };
const chunks = anthropicEvents().map((event) => encoder.encode(event));

/** Microseconds per call of `run`, over `count` calls. */
async function timed(count: number, run: () => unknown): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) await run();
  return ((performance.now() - start) * 1000) / count;
}

/** One stream's chunks through `wrap`, read to the end. */
async function through(wrap: (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>): Promise<void> {
  for await (const _ of wrap(ReadableStream.from(chunks))) { /* read */ }
}

const rounds = Number(Deno.args[0] ?? 7);
const count = Number(Deno.args[1] ?? 2000);
const results = { input: [] as number[], bare: [] as number[], guarded: [] as number[] };
for (let round = 0; round < rounds; round++) {
  results.input.push(await timed(count, () => guardValue(body, policy.scan.input, newRun(), { scope: "input" })));
  results.bare.push(await timed(count, () => through((body) => body)));
  results.guarded.push(
    await timed(count, () => through((body) => guardStream(body, "anthropic", policy.scan.output, newRun()))),
  );
}
console.log(
  `body ${JSON.stringify(body).length} bytes, stream ${chunks.length} events; microseconds, median of ${rounds}`,
);
console.log(`input scan per request      ${median(results.input).toFixed(1)}`);
console.log(`stream, bare pass-through   ${median(results.bare).toFixed(1)}`);
console.log(`stream, guardrails          ${median(results.guarded).toFixed(1)}`);
console.log(`guardrails' own, per stream ${(median(results.guarded) - median(results.bare)).toFixed(1)}`);

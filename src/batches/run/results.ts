/**
 * @module The results of an ended gateway-run batch as a stream of JSONL lines, read from KV a few requests at a
 * time: Anthropic's results (one line per request, those never run as canceled or expired), or one of OpenAI's two
 * files (the output file the 2xx answers, the error file the others and the requests the window closed on).
 */
import type { DoneEntry } from "./claims.ts";
import { readParts } from "./chunks.ts";
import { anthropicUnrunLine, openaiExpiredLine } from "./formats.ts";
import { KEYS, type RequestEntry, type RunBatch } from "./records.ts";

/** Which lines to give: all of Anthropic's, or one of OpenAI's files. */
export type ResultSet = "anthropic" | "output" | "error";

/** Requests read from KV per step of the stream. */
const STEP = 50;

/** The lines of `set`, each ending in "\n", never a blank one; a request whose entries are gone is left out. */
export function resultStream(kv: Deno.Kv, batch: RunBatch, set: ResultSet): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (next < batch.total) {
        const first = next;
        next = Math.min(batch.total, next + STEP);
        const lines = await linesOf(kv, batch, set, first, next);
        if (lines.length > 0) {
          controller.enqueue(encoder.encode(lines.map((line) => `${line}\n`).join("")));
          return;
        }
      }
      controller.close();
    },
  });
}

/** Bytes of the lines of `set`, read through once (an OpenAI file's size). */
export async function resultBytes(kv: Deno.Kv, batch: RunBatch, set: ResultSet): Promise<number> {
  let bytes = 0;
  for await (const chunk of resultStream(kv, batch, set)) bytes += chunk.byteLength;
  return bytes;
}

/** The lines of requests `first` to `end` (exclusive) that belong in `set`. */
async function linesOf(kv: Deno.Kv, batch: RunBatch, set: ResultSet, first: number, end: number): Promise<string[]> {
  const lines: string[] = [];
  const dones = await getAll<DoneEntry>(kv, range(first, end).map((index) => KEYS.done(batch.id, index)));
  for (const [offset, done] of dones.entries()) {
    const index = first + offset;
    if (done) {
      if (set === "output" && done.kind !== "succeeded") continue;
      if (set === "error" && done.kind !== "errored") continue;
      const line = await readParts(kv, KEYS.result(batch.id, index, done.nonce), done.parts);
      if (line !== undefined) lines.push(line);
      continue;
    }
    // A request with no result: the batch ended before it ran. OpenAI's files hold only those that expired.
    if (set === "output" || (set === "error" && batch.end !== "expired")) continue;
    const request = (await kv.get<RequestEntry>(KEYS.request(batch.id, index))).value;
    if (!request) continue;
    lines.push(
      set === "error"
        ? openaiExpiredLine(request.custom_id)
        : anthropicUnrunLine(request.custom_id, batch.end === "expired" ? "expired" : "canceled"),
    );
  }
  return lines;
}

/** The values at `keys`, in order (null for an absent one), ten per KV call as getMany allows. */
async function getAll<T>(kv: Deno.Kv, keys: Deno.KvKey[]): Promise<(T | null)[]> {
  const values: (T | null)[] = [];
  for (let at = 0; at < keys.length; at += 10) {
    const entries = await kv.getMany<T[]>(keys.slice(at, at + 10));
    for (const entry of entries) values.push(entry.value);
  }
  return values;
}

function range(first: number, end: number): number[] {
  return Array.from({ length: end - first }, (_, i) => first + i);
}

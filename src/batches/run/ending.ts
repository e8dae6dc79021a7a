/**
 * @module The end of a gateway-run batch: it is over once every request has its result, or it was canceled or ran
 * out of time and no instance holds one of its requests any more; its counts are then kept on its record, and an
 * OpenAI batch's output and error files are registered as its owner's before the batch says it has ended.
 */
import type { IdStore } from "../ids.ts";
import { liveClaims } from "./claims.ts";
import { deletePrefix } from "./chunks.ts";
import { openaiFile } from "./formats.ts";
import { countsOf, KEYS, replaceRun, type RunBatch, type RunEnd } from "./records.ts";
import { resultBytes } from "./results.ts";

/** What ending a batch needs. */
export interface EndingDeps {
  kv: Deno.Kv;
  ids: IdStore;
  now(): number;
  log(line: Record<string, unknown>): void;
}

/**
 * Ends `batch` when it is over: every request has its result, or it was canceled or ran out of time and no
 * instance holds one of its requests any more. True when it has ended (here or elsewhere).
 */
export async function settleBatch(d: EndingDeps, batch: RunBatch, versionstamp: string): Promise<boolean> {
  const { kv } = d;
  if (batch.state === "ended") return true;
  const now = d.now();
  const counts = await countsOf(kv, batch.id);
  const canceling = batch.state === "canceling";
  let end: RunEnd | undefined;
  if (counts.succeeded + counts.errored >= batch.total) end = canceling ? "canceled" : "completed";
  else if ((canceling || now >= batch.expires_at) && await liveClaims(kv, batch.id, now) === 0) {
    end = canceling ? "canceled" : "expired";
  }
  if (!end) return false;
  const ended: RunBatch = { ...batch, state: "ended", end, ended_at: now, counts };
  if (batch.protocol === "openai") {
    const unrun = end === "expired" && counts.succeeded + counts.errored < batch.total;
    // Named after the batch, so an instance that ends it at the same time registers the same files.
    const name = batch.id.slice(batch.id.indexOf("_") + 1);
    ended.files = {
      ...counts.succeeded > 0 ? { output: `file-${name}o` } : {},
      ...counts.errored > 0 || unrun ? { error: `file-${name}e` } : {},
    };
  }
  // Claims left behind by an instance that went would otherwise let a late result in after the end.
  await deletePrefix(kv, KEYS.claims(batch.id));
  // The files exist before the batch says it has ended: a client reads them as soon as it sees it.
  await registerFiles(d, ended);
  if (!await replaceRun(kv, ended, versionstamp, now)) return false;
  d.log({ event: "batch_ended", batch: batch.id, end, succeeded: counts.succeeded, errored: counts.errored });
  return true;
}

/** An ended OpenAI batch's output and error files, registered as its owner's. */
async function registerFiles(d: EndingDeps, batch: RunBatch): Promise<void> {
  const { kv } = d;
  const keepMs = Math.max(1, batch.results_expire_at - d.now());
  for (const [set, id] of Object.entries(batch.files ?? {}) as ["output" | "error", string][]) {
    await kv.set(KEYS.file(id), { batch: batch.id, set }, { expireIn: keepMs });
    await d.ids.put({
      kind: "file",
      protocol: "openai",
      id,
      owner: batch.token_id,
      upstream: null,
      upstream_id: null,
      created_at: batch.ended_at ?? d.now(),
      purpose: "batch_output",
      // Listings show the file as it is, without asking for it.
      object: openaiFile(id, batch, set, await resultBytes(kv, batch, set)),
    }, keepMs);
  }
}

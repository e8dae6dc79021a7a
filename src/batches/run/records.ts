/**
 * @module The KV model of a batch the gateway runs itself: its record, its requests (each cut into parts), the
 * markers that say which batches still run and whose they are, and its counts. Everything a batch writes expires with
 * its results, as the provider's do.
 */
import type { JsonObject } from "../../core/types.ts";
import { deletePrefix, readParts, writeBatch, writeParts } from "./chunks.ts";

/** A body this small is kept in its request's entry (under KV's 64 KiB a value, however its text is encoded). */
const INLINE_BYTES = 48 * 1024;

/** The protocol a batch was made in, which decides its shape, its states and its results' format. */
export type RunProtocol = "anthropic" | "openai";

/** The endpoints a request of a gateway-run batch may be served as. */
export const RUN_ENDPOINTS = ["/v1/messages", "/v1/chat/completions", "/v1/responses"] as const;
export type RunEndpoint = typeof RUN_ENDPOINTS[number];

/** One request of a batch as it was checked: its id in the batch and the body the endpoint takes. */
export interface RunRequest {
  custom_id: string;
  body: JsonObject;
}

/** How a batch ended: every request run, canceled, or out of time with requests unrun. */
export type RunEnd = "completed" | "canceled" | "expired";

/** A batch the gateway runs, as kept in KV; times in milliseconds since the epoch. */
export interface RunBatch {
  id: string;
  protocol: RunProtocol;
  endpoint: RunEndpoint;
  /** The token that made it: its requests run as that token, and only it sees the batch. */
  token_id: string;
  /** The models its requests name, as the client named them. */
  models: string[];
  total: number;
  /** Bytes of its requests' bodies as kept. */
  bytes: number;
  created_at: number;
  /** Requests not run by then expire (24 h, as both providers' windows). */
  expires_at: number;
  /** Its record and results are gone after this (29 days for Anthropic, 30 for OpenAI's files). */
  results_expire_at: number;
  state: "in_progress" | "canceling" | "ended";
  cancel_requested_at?: number;
  ended_at?: number;
  end?: RunEnd;
  /** The counts once it has ended (while it runs they are KV sums, see {@linkcode countsOf}). */
  counts?: RunCounts;
  /** An ended OpenAI batch's output and error files, by the ids handed out for them. */
  files?: { output?: string; error?: string };
  /** What the client's protocol keeps on the batch and hands back (OpenAI's metadata, input file, window). */
  extra?: JsonObject;
}

/** What a request's entry says: its id, and its body (when it fits beside it) or how many parts the body took. */
export interface RequestEntry {
  custom_id: string;
  parts: number;
  /** The body's JSON, when it fits in the entry itself: one read serves the request. */
  body?: string;
}

/** Counts of requests whose result is in, kept as KV sums so a result and its count land in one commit. */
export interface RunCounts {
  succeeded: number;
  errored: number;
}

/** The KV keys of gateway-run batches, in one place. */
export const KEYS = {
  batch: (id: string): Deno.KvKey => ["gbatch", id],
  /** Present while a batch has not ended: the runners look for work here. */
  active: (id: string): Deno.KvKey => ["gbatch_active", id],
  owner: (token: string, createdAt: number, id: string): Deno.KvKey => ["gbatch_owner", token, createdAt, id],
  ownerOf: (token: string): Deno.KvKey => ["gbatch_owner", token],
  request: (id: string, index: number): Deno.KvKey => ["gbatch_req", id, index],
  input: (id: string, index: number): Deno.KvKey => ["gbatch_in", id, index],
  claim: (id: string, index: number): Deno.KvKey => ["gbatch_claim", id, index],
  claims: (id: string): Deno.KvKey => ["gbatch_claim", id],
  done: (id: string, index: number): Deno.KvKey => ["gbatch_done", id, index],
  dones: (id: string): Deno.KvKey => ["gbatch_done", id],
  result: (id: string, index: number, nonce: string): Deno.KvKey => ["gbatch_res", id, index, nonce],
  count: (id: string, kind: keyof RunCounts): Deno.KvKey => ["gbatch_count", id, kind],
  /** An ended OpenAI batch's output or error file: which batch, which set of its lines. */
  file: (id: string): Deno.KvKey => ["gbatch_file", id],
};

/** The prefixes a batch's entries live under, for its deletion. */
export function prefixesOf(id: string): Deno.KvKey[] {
  return ["gbatch_req", "gbatch_in", "gbatch_claim", "gbatch_done", "gbatch_res", "gbatch_count"].map((k) => [k, id]);
}

/** What a new batch is made of. */
export interface NewRun {
  id: string;
  protocol: RunProtocol;
  endpoint: RunEndpoint;
  token_id: string;
  requests: readonly RunRequest[];
  now: number;
  /** How long its requests may wait to run. */
  windowMs: number;
  /** How long its results are kept, from its creation. */
  keepMs: number;
  extra?: JsonObject;
}

/**
 * Writes a new batch: its requests first, then its record and markers in one commit, so a batch is either whole or
 * absent (requests written before a failure are deleted, and would expire anyway).
 */
export async function createRun(kv: Deno.Kv, run: NewRun): Promise<RunBatch> {
  const expireIn = run.keepMs;
  let bytes = 0;
  const models = new Set<string>();
  try {
    const writes = writeBatch(kv, expireIn);
    for (const [index, request] of run.requests.entries()) {
      if (typeof request.body.model === "string") models.add(request.body.model);
      const text = JSON.stringify(request.body);
      const size = new TextEncoder().encode(text).byteLength;
      bytes += size;
      // A body of one part is kept in its entry; a larger one in parts beside it.
      const entry: RequestEntry = size <= INLINE_BYTES
        ? { custom_id: request.custom_id, parts: 0, body: text }
        : { custom_id: request.custom_id, parts: (await writeParts(writes, KEYS.input(run.id, index), text)).parts };
      await writes.set(KEYS.request(run.id, index), entry, request.custom_id.length + 32 + (entry.body ? size : 0));
    }
    await writes.flush();
    const batch: RunBatch = {
      id: run.id,
      protocol: run.protocol,
      endpoint: run.endpoint,
      token_id: run.token_id,
      models: [...models],
      total: run.requests.length,
      bytes,
      created_at: run.now,
      expires_at: run.now + run.windowMs,
      results_expire_at: run.now + run.keepMs,
      state: "in_progress",
      ...run.extra ? { extra: run.extra } : {},
    };
    const made = await kv.atomic()
      .check({ key: KEYS.batch(run.id), versionstamp: null })
      .set(KEYS.batch(run.id), batch, { expireIn })
      .set(KEYS.active(run.id), true, { expireIn })
      .set(KEYS.owner(run.token_id, run.now, run.id), true, { expireIn })
      .commit();
    if (!made.ok) throw new Error(`a batch with id ${run.id} exists`);
    return batch;
  } catch (err) {
    await deleteEntries(kv, run.id);
    throw err;
  }
}

/** The batch with this id while its results are kept, with the entry's versionstamp; null otherwise. */
export async function getRun(
  kv: Deno.Kv,
  id: string,
  now: number,
): Promise<{ batch: RunBatch; versionstamp: string } | null> {
  const entry = await kv.get<RunBatch>(KEYS.batch(id));
  if (!entry.value || entry.value.results_expire_at <= now) return null;
  return { batch: entry.value, versionstamp: entry.versionstamp };
}

/** The batches of a token while their results are kept, newest first. */
export async function listRuns(kv: Deno.Kv, tokenId: string, now: number): Promise<RunBatch[]> {
  const ids: string[] = [];
  for await (const entry of kv.list({ prefix: KEYS.ownerOf(tokenId) }, { reverse: true })) {
    ids.push(entry.key[3] as string);
  }
  const batches: RunBatch[] = [];
  for (let at = 0; at < ids.length; at += 10) {
    const entries = await kv.getMany<RunBatch[]>(ids.slice(at, at + 10).map(KEYS.batch));
    for (const entry of entries) if (entry.value && entry.value.results_expire_at > now) batches.push(entry.value);
  }
  return batches;
}

/** How many requests have their result in. */
export async function countsOf(kv: Deno.Kv, id: string): Promise<RunCounts> {
  const [succeeded, errored] = await kv.getMany<Deno.KvU64[]>([KEYS.count(id, "succeeded"), KEYS.count(id, "errored")]);
  return { succeeded: Number(succeeded.value?.value ?? 0n), errored: Number(errored.value?.value ?? 0n) };
}

/** A request of the batch: its id and body; undefined when it is gone. */
export async function readRequest(kv: Deno.Kv, id: string, index: number): Promise<RunRequest | undefined> {
  const entry = await kv.get<RequestEntry>(KEYS.request(id, index));
  if (!entry.value) return undefined;
  const text = entry.value.body ?? await readParts(kv, KEYS.input(id, index), entry.value.parts);
  return text === undefined ? undefined : { custom_id: entry.value.custom_id, body: JSON.parse(text) };
}

/**
 * Changes a batch's record when it still is as read (`versionstamp`); false when another writer changed it first.
 * An ended batch leaves the runners' list in the same commit.
 */
export async function replaceRun(kv: Deno.Kv, batch: RunBatch, versionstamp: string, now: number): Promise<boolean> {
  const expireIn = Math.max(1, batch.results_expire_at - now);
  const op = kv.atomic().check({ key: KEYS.batch(batch.id), versionstamp }).set(KEYS.batch(batch.id), batch, {
    expireIn,
  });
  if (batch.state === "ended") op.delete(KEYS.active(batch.id));
  return (await op.commit()).ok;
}

/** Deletes a batch and everything it wrote. */
export async function deleteRun(kv: Deno.Kv, batch: RunBatch): Promise<void> {
  await kv.atomic()
    .delete(KEYS.batch(batch.id))
    .delete(KEYS.active(batch.id))
    .delete(KEYS.owner(batch.token_id, batch.created_at, batch.id))
    .commit();
  await deleteEntries(kv, batch.id);
}

/** Deletes a batch's requests, claims, results and counts. */
async function deleteEntries(kv: Deno.Kv, id: string): Promise<void> {
  for (const prefix of prefixesOf(id)) await deletePrefix(kv, prefix);
}

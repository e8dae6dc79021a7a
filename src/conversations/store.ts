/**
 * @module Stored Responses in Deno KV, per token: each response's own input items, its answer and the ids of the
 * responses it continues, as JSON split into chunks below KV's 64 KiB value limit, every key expiring with KV's
 * `expireIn`. Keys: ["responses", token, id] -> head (written last, so a head means the rest is there),
 * ["responses", token, id, n] -> chunk n, ["response_items", token, item id] -> the response whose output holds it.
 */
import { fitsKey } from "../core/key_text.ts";
import { createKvWriter, type KvWriter } from "../core/kv_write.ts";
import type { JsonObject } from "../core/types.ts";

/** One stored response. */
export interface StoredResponse {
  /** The response object as its client received it. */
  response: JsonObject;
  /** The items this request added (its input, with item references resolved), each with an id. */
  input: JsonObject[];
  /** The ids of the responses this one continues by `previous_response_id`, oldest first. */
  chain: string[];
}

/** What the head of a stored response says about it. */
interface Head {
  chunks: number;
  created_at: number;
  /** Epoch milliseconds after which it counts as gone, whether or not KV has removed it yet. */
  expires_at: number;
}

/** The stored Responses of every token, each token seeing only its own. */
export interface ResponseStore {
  save(token: string, record: StoredResponse): Promise<void>;
  /** The stored responses with these ids, in order; undefined for one that is not (or no longer) stored. */
  load(token: string, ids: readonly string[]): Promise<(StoredResponse | undefined)[]>;
  /** The id of the stored response whose output holds the item `itemId`. */
  itemOwner(token: string, itemId: string): Promise<string | undefined>;
  /** Deletes a response and its item index; false when there was none. */
  delete(token: string, id: string): Promise<boolean>;
  /** Deletes every response of a token; returns how many there were. */
  purge(token: string): Promise<number>;
  /** Which of `tokens` owns the response `id`, for the operator, who does not know it. */
  owner(id: string, tokens: readonly string[]): Promise<string | undefined>;
}

/** Options for {@linkcode responseStore}. */
export interface ResponseStoreOptions {
  /** Days a response is kept. */
  days: number;
  /** Epoch milliseconds; injected so tests can move past the expiry. */
  now(): number;
  /** Commits with bounded retries when other processes write the same KV (by default one that logs nothing). */
  writes?: KvWriter;
}

/** Bytes per chunk: KV's value limit is 65 536 bytes, and a value's encoding adds a little. */
const CHUNK_BYTES = 60_000;
/** Bytes per atomic commit, below KV's 800 KiB. */
const COMMIT_BYTES = 600_000;
/** Writes per atomic commit, below KV's 1000 mutations. */
const COMMIT_KEYS = 500;
/** Keys per getMany, KV's limit. */
const READ_KEYS = 10;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const headKey = (token: string, id: string): Deno.KvKey => ["responses", token, id];
const itemKey = (token: string, item: string): Deno.KvKey => ["response_items", token, item];

/** The output items of a response object that carry an id. */
export function outputItems(response: JsonObject): JsonObject[] {
  return Array.isArray(response.output) ? response.output as JsonObject[] : [];
}

/** The response store over `kv`. */
export function responseStore(kv: Deno.Kv, options: ResponseStoreOptions): ResponseStore {
  const ttl = options.days * 86_400_000;
  const kvWrites = options.writes ?? createKvWriter({ log: () => {} });

  async function getAll<T>(keys: readonly Deno.KvKey[]): Promise<Deno.KvEntryMaybe<T>[]> {
    const batches: Promise<Deno.KvEntryMaybe<T>[]>[] = [];
    for (let at = 0; at < keys.length; at += READ_KEYS) batches.push(kv.getMany<T[]>(keys.slice(at, at + READ_KEYS)));
    return (await Promise.all(batches)).flat();
  }

  /** Sets (value) or deletes (undefined) keys in as few commits as KV's limits allow, in order. */
  async function writeAll(writes: readonly [Deno.KvKey, unknown][]): Promise<void> {
    const commits: [Deno.KvKey, unknown][][] = [];
    let batch: [Deno.KvKey, unknown][] = [];
    let bytes = 0;
    for (const write of writes) {
      const size = write[1] instanceof Uint8Array ? write[1].byteLength : 256;
      if (batch.length > 0 && (batch.length >= COMMIT_KEYS || bytes + size > COMMIT_BYTES)) {
        commits.push(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(write);
      bytes += size;
    }
    if (batch.length > 0) commits.push(batch);
    // Each commit is retried while another process holds the KV file; one that gives up fails the whole write.
    for (const commit of commits) {
      await kvWrites.write("response_store", async () => {
        const op = kv.atomic();
        for (const [key, value] of commit) {
          if (value === undefined) op.delete(key);
          else op.set(key, value, { expireIn: ttl });
        }
        await op.commit();
      });
    }
  }

  async function load(token: string, ids: readonly string[]): Promise<(StoredResponse | undefined)[]> {
    // An id too long for a key was never stored; KV is asked only for the others.
    if (!ids.every(fitsKey)) {
      const found = await load(token, ids.filter(fitsKey));
      return ids.map((id) => fitsKey(id) ? found.shift() : undefined);
    }
    const now = options.now();
    const heads = (await getAll<Head>(ids.map((id) => headKey(token, id))))
      .map((entry) => entry.value && entry.value.expires_at > now ? entry.value : undefined);
    const chunkKeys = heads.flatMap((head, i) =>
      Array.from({ length: head?.chunks ?? 0 }, (_, n): Deno.KvKey => [...headKey(token, ids[i]), n])
    );
    const chunks = await getAll<Uint8Array>(chunkKeys);
    let at = 0;
    return heads.map((head) => {
      if (!head) return undefined;
      const parts = chunks.slice(at, at += head.chunks).map((entry) => entry.value);
      // A chunk can be gone before its head: it was written, and so expires, a moment earlier.
      if (parts.some((part) => part === null)) return undefined;
      const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part!.byteLength, 0));
      let offset = 0;
      for (const part of parts) {
        bytes.set(part!, offset);
        offset += part!.byteLength;
      }
      return JSON.parse(decoder.decode(bytes)) as StoredResponse;
    });
  }

  return {
    async save(token, record) {
      const id = String(record.response.id);
      const bytes = encoder.encode(JSON.stringify(record));
      const writes: [Deno.KvKey, unknown][] = [];
      for (let at = 0; at < bytes.byteLength; at += CHUNK_BYTES) {
        writes.push([[...headKey(token, id), writes.length], bytes.slice(at, at + CHUNK_BYTES)]);
      }
      const now = options.now();
      const head: Head = { chunks: writes.length, created_at: now, expires_at: now + ttl };
      for (const item of outputItems(record.response)) {
        if (typeof item.id === "string") writes.push([itemKey(token, item.id), id]);
      }
      // The head goes last: until it is written, nothing of the response can be found.
      writes.push([headKey(token, id), head]);
      await writeAll(writes);
    },
    load,
    async itemOwner(token, itemId) {
      if (!fitsKey(itemId)) return undefined;
      return (await kv.get<string>(itemKey(token, itemId))).value ?? undefined;
    },
    async delete(token, id) {
      if (!fitsKey(id)) return false;
      const key = headKey(token, id);
      const head = await kv.get<Head>(key);
      if (!head.value) return false;
      const [record] = await load(token, [id]);
      const items = record ? outputItems(record.response).map((item) => String(item.id)) : [];
      const owners = await getAll<string>(items.map((item) => itemKey(token, item)));
      const chunks = Array.from({ length: head.value.chunks }, (_, n): Deno.KvKey => [...key, n]);
      const index = owners.filter((entry) => entry.value === id).map((entry) => entry.key);
      // The head goes first, so the response is gone at once even if the rest takes longer.
      await writeAll([key, ...chunks, ...index].map((k): [Deno.KvKey, undefined] => [k, undefined]));
      // One past its days is gone already for every reader; KV removes it in its own time.
      return record !== undefined;
    },
    async purge(token) {
      const heads: Deno.KvKey[] = [];
      const rest: Deno.KvKey[] = [];
      for await (const entry of kv.list({ prefix: ["responses", token] })) {
        (entry.key.length === 3 ? heads : rest).push(entry.key);
      }
      for await (const entry of kv.list({ prefix: ["response_items", token] })) rest.push(entry.key);
      await writeAll([...heads, ...rest].map((key): [Deno.KvKey, undefined] => [key, undefined]));
      return heads.length;
    },
    async owner(id, tokens) {
      if (!fitsKey(id)) return undefined;
      const heads = await getAll<Head>(tokens.map((token) => headKey(token, id)));
      const now = options.now();
      const at = heads.findIndex((entry) => entry.value && entry.value.expires_at > now);
      return at === -1 ? undefined : tokens[at];
    },
  };
}

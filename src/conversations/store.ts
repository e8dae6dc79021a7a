/**
 * @module Stored Responses in Deno KV, per token: each response's own input items, its answer and the ids of the
 * responses it continues, every key expiring with KV's `expireIn`, read in as few round trips as KV allows. Keys:
 * ["responses", token, id] -> head (written last, so a head means the rest is there), ["responses", token, id, n] ->
 * chunk n of the record's JSON (see record_bytes.ts), ["responses", token, id, "chain"] -> the ids it continues and
 * their heads, and ["response_items", token, item id] -> the response whose output holds it, with its head.
 */
import { fitsKey } from "../core/key_text.ts";
import { createKvWriter, type KvWriter } from "../core/kv_write.ts";
import type { JsonObject } from "../core/types.ts";
import { kvBatches } from "./kv_batches.ts";
import { CHUNK_BYTES, decodeRange, encodeRecord, RESPONSE_AT } from "./record_bytes.ts";

/** One stored response. */
export interface StoredResponse {
  /** The response object as its client received it. */
  response: JsonObject;
  /** The items this request added (its input, with item references resolved), each with an id. */
  input: JsonObject[];
  /** The ids of the responses this one continues by `previous_response_id`, oldest first. */
  chain: string[];
  /** Their heads as read when this one was made, kept with the ids so a continuation need not read them again. */
  chainHeads?: KeptHead[];
}

/** A stored response read back; `chain` is there when its head was read with chains, or for an older record. */
export type StoredTurn = Omit<StoredResponse, "chain"> & { chain?: string[] };

/** A stored response's head as kept: opaque outside the store. */
export type KeptHead = Head;

/** What an item's index entry holds: the response whose output holds it, and that response's head. */
type ItemIndex = { owner: string; head: Head };

/** The ids a response continues as kept under its chain key: the ids alone (older), or with their heads. */
type KeptChain = string[] | { ids: string[]; heads: Head[] };

/** What the head of a stored response says about it, in KV. */
interface Head {
  chunks: number;
  created_at: number;
  /** Epoch milliseconds after which it counts as gone, whether or not KV has removed it yet. */
  expires_at: number;
  /** The record's bytes; absent on a record kept before the fields below were. */
  bytes?: number;
  /** Where the response object ends in the record, which starts with it: an item reference reads only that far. */
  answer_end?: number;
  /** About the bytes its input and output add to a conversation made whole. */
  replay?: number;
  /** How many responses it continues; their ids are under their own key, so only the response continued reads them. */
  turns?: number;
}

/** What a stored response's head tells before its record is read. */
export interface StoredHead {
  id: string;
  /** Bytes read to have its whole record. */
  bytes: number;
  /** Bytes read to have only its response object. */
  answerBytes: number;
  /** About the bytes its input and output add to a conversation made whole; unknown for an older record. */
  replay?: number;
  /** The ids of the responses it continues, oldest first: read with `chains` (an older record keeps them inside). */
  chain?: string[];
  /** Their heads, when kept with the ids (undefined for one past its days): read with `chains`. */
  earlier?: (StoredHead | undefined)[];
  /** Its head as kept. */
  kept: Head;
}

/** The stored Responses of every token, each token seeing only its own. */
export interface ResponseStore {
  save(token: string, record: StoredResponse): Promise<void>;
  /** The heads of the stored responses `ids`, in order; with `chains`, each with the ids of those it continues. */
  heads(token: string, ids: readonly string[], options?: { chains?: boolean }): Promise<(StoredHead | undefined)[]>;
  /** The records of `heads`; undefined for one whose chunks are gone. */
  records(token: string, heads: readonly (StoredHead | undefined)[]): Promise<(StoredTurn | undefined)[]>;
  /** The response objects of `heads` alone, reading no more of each record than holds it. */
  answers(token: string, heads: readonly (StoredHead | undefined)[]): Promise<(JsonObject | undefined)[]>;
  /** The stored responses with these ids, in order; undefined for one that is not (or no longer) stored. */
  load(token: string, ids: readonly string[]): Promise<(StoredResponse | undefined)[]>;
  /** The heads of the stored responses whose output holds each of `itemIds` (kept with the item since they were). */
  itemHeads(token: string, itemIds: readonly string[]): Promise<(StoredHead | undefined)[]>;
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

const headKey = (token: string, id: string): Deno.KvKey => ["responses", token, id];
const chainKey = (token: string, id: string): Deno.KvKey => ["responses", token, id, "chain"];
const itemKey = (token: string, item: string): Deno.KvKey => ["response_items", token, item];

/** The output items of a response object that carry an id. */
export function outputItems(response: JsonObject): JsonObject[] {
  return Array.isArray(response.output) ? response.output as JsonObject[] : [];
}

/** A head as read, with what it costs to read the rest; an older head's sizes are bounded by its chunks. */
function storedHead(id: string, kept: Head, chain?: string[]): StoredHead {
  const bytes = kept.bytes ?? kept.chunks * CHUNK_BYTES;
  const answerBytes = kept.answer_end === undefined
    ? bytes
    : Math.min(bytes, Math.ceil(kept.answer_end / CHUNK_BYTES) * CHUNK_BYTES);
  return { id, bytes, answerBytes, replay: kept.replay, chain: chain ?? (kept.turns === 0 ? [] : undefined), kept };
}

/** The response store over `kv`. */
export function responseStore(kv: Deno.Kv, options: ResponseStoreOptions): ResponseStore {
  const ttl = options.days * 86_400_000;
  const kvWrites = options.writes ?? createKvWriter({ log: () => {} });

  const { getAll, writeAll } = kvBatches(kv, kvWrites, ttl);

  async function heads(
    token: string,
    ids: readonly string[],
    { chains = false } = {},
  ): Promise<(StoredHead | undefined)[]> {
    // An id too long for a key was never stored; KV is asked only for the others.
    if (!ids.every(fitsKey)) {
      const found = await heads(token, ids.filter(fitsKey), { chains });
      return ids.map((id) => fitsKey(id) ? found.shift() : undefined);
    }
    const now = options.now();
    const keys = ids.map((id) => headKey(token, id));
    const entries = await getAll<Head | KeptChain>(chains ? [...keys, ...ids.map((id) => chainKey(token, id))] : keys);
    return ids.map((id, i) => {
      const kept = entries[i].value as Head | null;
      if (!kept || !(kept.expires_at > now)) return undefined;
      const chain = chains && kept.turns ? entries[ids.length + i].value as KeptChain | null : undefined;
      // The ids written with the head are gone before it: the chain expired a moment earlier.
      if (chain === null) return undefined;
      if (chain === undefined || Array.isArray(chain)) return storedHead(id, kept, chain);
      const head = storedHead(id, kept, chain.ids);
      head.earlier = chain.heads.map((earlier, n) =>
        earlier.expires_at > now ? storedHead(chain.ids[n], earlier) : undefined
      );
      return head;
    });
  }

  /** The first `count(head)` chunks of each head; undefined where one is gone (written, so expired, a moment early). */
  async function chunksOf(
    token: string,
    list: readonly (StoredHead | undefined)[],
    count: (head: StoredHead) => number,
  ): Promise<((Uint8Array | null)[] | undefined)[]> {
    const keys = list.flatMap((head) =>
      head ? Array.from({ length: count(head) }, (_, n): Deno.KvKey => [...headKey(token, head.id), n]) : []
    );
    const entries = await getAll<Uint8Array>(keys);
    let at = 0;
    return list.map((head) => {
      if (!head) return undefined;
      const parts = entries.slice(at, at += count(head)).map((entry) => entry.value);
      return parts.some((part) => part === null) ? undefined : parts;
    });
  }

  async function records(token: string, list: readonly (StoredHead | undefined)[]) {
    const all = await chunksOf(token, list, (head) => head.kept.chunks);
    return list.map((head, i) => {
      const parts = all[i];
      if (!head || !parts) return undefined;
      // Each record is decoded on its own and its chunks let go, so a chain is held once, as parsed items.
      all[i] = undefined;
      const record = JSON.parse(decodeRange(parts, 0, Infinity)) as StoredTurn;
      if (head.chain) record.chain = head.chain;
      return record;
    });
  }

  async function answers(token: string, list: readonly (StoredHead | undefined)[]) {
    const count = (head: StoredHead) =>
      head.kept.answer_end === undefined ? head.kept.chunks : Math.ceil(head.kept.answer_end / CHUNK_BYTES);
    const all = await chunksOf(token, list, count);
    return list.map((head, i) => {
      const parts = all[i];
      if (!head || !parts) return undefined;
      all[i] = undefined;
      if (head.kept.answer_end === undefined) {
        return (JSON.parse(decodeRange(parts, 0, Infinity)) as StoredTurn).response;
      }
      return JSON.parse(decodeRange(parts, RESPONSE_AT, head.kept.answer_end)) as JsonObject;
    });
  }

  async function load(token: string, ids: readonly string[]): Promise<(StoredResponse | undefined)[]> {
    const read = await records(token, await heads(token, ids, { chains: true }));
    return read.map((record) => record && { ...record, chain: record.chain ?? [] });
  }

  return {
    async save(token, record) {
      const id = String(record.response.id);
      const encoded = encodeRecord(record);
      const writes: [Deno.KvKey, unknown][] = encoded.chunks.map((chunk, n) => [[...headKey(token, id), n], chunk]);
      if (record.chain.length > 0) {
        const { chain, chainHeads } = record;
        const kept: KeptChain = chainHeads?.length === chain.length ? { ids: chain, heads: chainHeads } : chain;
        writes.push([chainKey(token, id), kept]);
      }
      const now = options.now();
      const head: Head = {
        chunks: encoded.chunks.length,
        created_at: now,
        expires_at: now + ttl,
        bytes: encoded.bytes,
        answer_end: encoded.answerEnd,
        replay: encoded.replay,
        turns: record.chain.length,
      };
      // The head is kept with each item, so a reference reads the answer without reading the head first.
      const indexed: ItemIndex = { owner: id, head };
      for (const item of outputItems(record.response)) {
        if (typeof item.id === "string") writes.push([itemKey(token, item.id), indexed]);
      }
      // The head goes last: until it is written, nothing of the response can be found.
      writes.push([headKey(token, id), head]);
      await writeAll(writes);
    },
    heads,
    records,
    answers,
    load,
    async itemHeads(token, itemIds) {
      // An item id too long for a key was never stored.
      const asked = itemIds.filter(fitsKey);
      const index = (await getAll<ItemIndex | string>(asked.map((item) => itemKey(token, item)))).map((e) => e.value);
      // An item indexed before heads were kept with it names only its response: that head is read.
      const older = [...new Set(index.filter((entry): entry is string => typeof entry === "string"))];
      const olderHeads = new Map(older.length ? (await heads(token, older)).map((head, i) => [older[i], head]) : []);
      const now = options.now();
      const found = index.map((entry) => {
        if (entry === null) return undefined;
        if (typeof entry === "string") return olderHeads.get(entry);
        return entry.head.expires_at > now ? storedHead(entry.owner, entry.head) : undefined;
      });
      return itemIds.map((item) => fitsKey(item) ? found.shift() : undefined);
    },
    async delete(token, id) {
      if (!fitsKey(id)) return false;
      const key = headKey(token, id);
      const head = await kv.get<Head>(key);
      if (!head.value) return false;
      const [record] = await load(token, [id]);
      const items = record ? outputItems(record.response).map((item) => String(item.id)) : [];
      const owners = await getAll<ItemIndex | string>(items.map((item) => itemKey(token, item)));
      const chunks = Array.from({ length: head.value.chunks }, (_, n): Deno.KvKey => [...key, n]);
      const ownedBy = (value: ItemIndex | string | null) => typeof value === "string" ? value : value?.owner;
      const index = owners.filter((entry) => ownedBy(entry.value) === id).map((entry) => entry.key);
      // The head goes first, so the response is gone at once even if the rest takes longer.
      const keys = [key, ...chunks, chainKey(token, id), ...index];
      await writeAll(keys.map((k): [Deno.KvKey, undefined] => [k, undefined]));
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

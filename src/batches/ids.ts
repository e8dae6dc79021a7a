/**
 * @module Every batch and file id the gateway hands out, mapped in KV to the upstream that holds it, the provider's
 * id and the token that owns it: another token's id reads as unknown, and listings hold only the caller's own.
 */
import type { BatchProtocol, IdKind, IdRecord } from "../core/batch_contract.ts";

export type { BatchProtocol, IdKind, IdRecord } from "../core/batch_contract.ts";

/** How long an id is remembered by default: past the providers' own retention (Anthropic keeps results 29 days). */
export const ID_DAYS = 31;
const DAY_MS = 86_400_000;

/** The id store over KV. */
export interface IdStore {
  /** Records an id; `expireInMs` is how long it is remembered (31 days by default). */
  put(record: IdRecord, expireInMs?: number): Promise<void>;
  /** The record when it exists and belongs to `owner`, else undefined: the caller answers the provider's 404. */
  owned(kind: IdKind, id: string, owner: string): Promise<IdRecord | undefined>;
  /** Any token's record, for operators. */
  get(kind: IdKind, id: string): Promise<IdRecord | undefined>;
  /** The owner's records of one kind made through one protocol, newest first. */
  listOwned(kind: IdKind, protocol: BatchProtocol, owner: string): Promise<IdRecord[]>;
  /** Every record of a kind, newest first, at most `limit` of them (operators). */
  listAll(kind: IdKind, limit?: number): Promise<IdRecord[]>;
  remove(record: IdRecord): Promise<void>;
  /**
   * Marks a batch's results as counted; true for the one caller that marked it, false when already marked. The mark
   * is a key of its own, so a record written back from an older read cannot clear it.
   */
  claimSettle(kind: IdKind, id: string): Promise<boolean>;
  /** Records a native batch just made and puts it in the sweep's queue, due at once. */
  putNative(record: IdRecord): Promise<void>;
  /** At most `limit` queued native batches due by `now`, the longest due first. */
  due(now: number, limit: number): Promise<Deno.KvEntry<string>[]>;
  /**
   * Moves a queued batch to `until`, as a claim: the key answered when this caller moved it, undefined when another
   * caller (another instance's sweep) moved it first.
   */
  postpone(entry: Deno.KvEntry<string>, until: number): Promise<Deno.KvKey | undefined>;
  /** Takes a batch out of the sweep's queue (it has ended and is counted, or is gone). */
  unqueue(key: Deno.KvKey): Promise<void>;
}

const ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * A new id for something the gateway holds itself: the prefix, the time (fixed width, so ids of one prefix sort by
 * age) and 20 random characters, which no caller can guess.
 */
export function newId(prefix: string, now: Date): string {
  const time = now.getTime().toString(36).padStart(9, "0");
  const random = crypto.getRandomValues(new Uint8Array(20));
  return `${prefix}${time}${Array.from(random, (byte) => ID_ALPHABET[byte % 62]).join("")}`;
}

/** The id store on `kv`. */
export function idStore(kv: Deno.Kv): IdStore {
  const key = (kind: IdKind, id: string) => ["batch_id", kind, id];
  const ownedKey = (record: Pick<IdRecord, "owner" | "kind" | "protocol" | "created_at" | "id">) => [
    "batch_owned",
    record.owner,
    record.kind,
    record.protocol,
    record.created_at,
    record.id,
  ];
  /** The writes of one record: it, and its place in its owner's listing. */
  const written = (record: IdRecord, expireIn: number) =>
    kv.atomic().set(key(record.kind, record.id), record, { expireIn }).set(ownedKey(record), record.id, { expireIn });
  const get = async (kind: IdKind, id: string) => (await kv.get<IdRecord>(key(kind, id))).value ?? undefined;
  return {
    async put(record, expireInMs = ID_DAYS * DAY_MS) {
      await written(record, expireInMs).commit();
    },
    async owned(kind, id, owner) {
      const record = await get(kind, id);
      return record?.owner === owner ? record : undefined;
    },
    get,
    async listOwned(kind, protocol, owner) {
      const ids: string[] = [];
      for await (
        const entry of kv.list<string>({ prefix: ["batch_owned", owner, kind, protocol] }, { reverse: true })
      ) {
        ids.push(entry.value);
      }
      const records = await Promise.all(ids.map((id) => get(kind, id)));
      return records.filter((record): record is IdRecord => record?.owner === owner);
    },
    async listAll(kind, limit = 1000) {
      const records: IdRecord[] = [];
      for await (const entry of kv.list<IdRecord>({ prefix: ["batch_id", kind] })) records.push(entry.value);
      return records.sort((a, b) => b.created_at - a.created_at).slice(0, limit);
    },
    async claimSettle(kind, id) {
      const entry = await kv.get<IdRecord>(key(kind, id));
      if (!entry.value || entry.value.settled) return false;
      const mark = ["batch_settled", kind, id];
      const expireIn = ID_DAYS * DAY_MS;
      const result = await kv.atomic().check({ key: mark, versionstamp: null }).set(mark, true, { expireIn })
        .set(key(kind, id), { ...entry.value, settled: true }, { expireIn }).commit();
      return result.ok;
    },
    async putNative(record) {
      const expireIn = ID_DAYS * DAY_MS;
      await written(record, expireIn).set(["batch_sweep", record.created_at, record.id], record.id, { expireIn })
        .commit();
    },
    async due(now, limit) {
      const entries: Deno.KvEntry<string>[] = [];
      const selector = { prefix: ["batch_sweep"], end: ["batch_sweep", now + 1] };
      for await (const entry of kv.list<string>(selector, { limit })) entries.push(entry);
      return entries;
    },
    async postpone(entry, until) {
      const moved = ["batch_sweep", until, entry.value];
      const result = await kv.atomic().check(entry).delete(entry.key)
        .set(moved, entry.value, { expireIn: ID_DAYS * DAY_MS }).commit();
      return result.ok ? moved : undefined;
    },
    async unqueue(key) {
      await kv.delete(key);
    },
    async remove(record) {
      await kv.atomic().delete(key(record.kind, record.id)).delete(ownedKey(record)).commit();
    },
  };
}

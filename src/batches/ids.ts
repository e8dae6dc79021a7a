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
  /** Marks a batch's results as counted; true for the one caller that marked it, false when already marked. */
  claimSettle(kind: IdKind, id: string): Promise<boolean>;
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
  const get = async (kind: IdKind, id: string) => (await kv.get<IdRecord>(key(kind, id))).value ?? undefined;
  return {
    async put(record, expireInMs = ID_DAYS * DAY_MS) {
      await kv.atomic()
        .set(key(record.kind, record.id), record, { expireIn: expireInMs })
        .set(ownedKey(record), record.id, { expireIn: expireInMs })
        .commit();
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
      const settled = { ...entry.value, settled: true };
      const result = await kv.atomic().check(entry).set(key(kind, id), settled, { expireIn: ID_DAYS * DAY_MS })
        .commit();
      return result.ok;
    },
    async remove(record) {
      await kv.atomic().delete(key(record.kind, record.id)).delete(ownedKey(record)).commit();
    },
  };
}

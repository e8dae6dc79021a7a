/**
 * @module The request log's indexes: one KV key per indexed value and batch names all of the batch's entries with that
 * value, and reading through them gives the entries newest first, as per-entry keys would.
 */
import { type LogIndex, logIndexKey, logKey, type RequestLogEntry } from "./log_entry.ts";

/** An entry's place in the log: its start time and request id, the two last parts of its log key. */
export type LogRef = [number, string];

/** One index key and the entries it names (all of them, its own newest one included). */
export interface IndexGroup {
  key: Deno.KvKey;
  refs: LogRef[];
}

/**
 * The longest time between the oldest and the newest entry of one group. A group's key holds its newest entry's time,
 * so a read of [since, until) lists keys up to `until` plus this span to find older entries of later groups.
 */
export const GROUP_SPAN_MS = 60_000;
// Each ref takes about 50 bytes; KV takes values up to 64 KiB.
const REFS_PER_GROUP = 500;

/** Orders refs newest first, as the log's keys sort read backwards. */
function newestFirst(a: LogRef, b: LogRef): number {
  return b[0] - a[0] || (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0);
}

/** The indexed values of one entry. */
function indexValues(entry: RequestLogEntry): [LogIndex, string | number | null][] {
  return [
    ["token", entry.token_id],
    ["owner", entry.owner],
    ["model", entry.model],
    ["session", entry.session_id],
    ["status", entry.status],
  ];
}

/**
 * The index keys of a batch of entries: per index and value, the entries in groups of at most
 * {@linkcode REFS_PER_GROUP} spanning at most {@linkcode GROUP_SPAN_MS}, each keyed by its newest entry. A batch of
 * requests by one token for one model thus writes a handful of keys instead of several per request.
 */
export function indexGroups(entries: readonly RequestLogEntry[]): IndexGroup[] {
  const byValue = new Map<string, { index: LogIndex; value: string | number; refs: LogRef[] }>();
  for (const entry of entries) {
    const ref: LogRef = [Date.parse(entry.time), entry.request_id];
    for (const [index, value] of indexValues(entry)) {
      if (value === null) continue;
      const id = `${index}\0${typeof value}\0${value}`;
      let found = byValue.get(id);
      if (!found) byValue.set(id, found = { index, value, refs: [] });
      found.refs.push(ref);
    }
  }
  const groups: IndexGroup[] = [];
  for (const { index, value, refs } of byValue.values()) {
    refs.sort(newestFirst);
    for (let start = 0; start < refs.length;) {
      const [newestAt, newestId] = refs[start];
      let end = start + 1;
      while (end < refs.length && end - start < REFS_PER_GROUP && newestAt - refs[end][0] <= GROUP_SPAN_MS) end++;
      groups.push({ key: logIndexKey(index, value, newestAt, newestId), refs: refs.slice(start, end) });
      start = end;
    }
  }
  return groups;
}

/** Compares a ref with an index key's own entry (its two last parts), in the log's order. */
function after(ref: LogRef, key: Deno.KvKey): boolean {
  return newestFirst(ref, [key[3] as number, key[4] as string]) < 0;
}

/**
 * The refs of entries in [since, until) with `value` in `index`, newest first, read from the index's keys until
 * `wanted(refs)` says there are enough or `maxRefs` were read. Keys written one per entry (value null) read as groups of
 * one. A ref is handed on only once no later-listed key can hold a newer one: every key lists entries no newer than
 * itself.
 */
export async function* indexRefs(
  kv: Deno.Kv,
  [index, value]: [LogIndex, string | number],
  range: { since: number; until: number },
  maxRefs: number,
): AsyncGenerator<LogRef> {
  const selector = {
    start: logIndexKey(index, value, range.since, ""),
    end: logIndexKey(index, value, range.until + GROUP_SPAN_MS, ""),
  };
  let pool: LogRef[] = [];
  let read = 0;
  // The pool is kept newest first: it is sorted again only after a key added to it.
  for await (const { key, value: refs } of kv.list<LogRef[] | null>(selector, { reverse: true, batchSize: 100 })) {
    let ready = 0;
    while (ready < pool.length && after(pool[ready], key)) ready++;
    if (ready > 0) {
      yield* pool.slice(0, ready);
      pool = pool.slice(ready);
    }
    const before = pool.length;
    for (const ref of refs ?? [[key[3] as number, key[4] as string] as LogRef]) {
      if (ref[0] >= range.since && ref[0] < range.until) pool.push(ref);
    }
    if (pool.length > before) pool.sort(newestFirst);
    read += refs?.length ?? 1;
    if (read > maxRefs) break;
  }
  yield* pool;
}

/** The log key of a ref. */
export function refKey([at, id]: LogRef): Deno.KvKey {
  return logKey(at, id);
}

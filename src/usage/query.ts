/** @module Reading usage back: totals per token, group, model, session or day over a date range, and the log. */
import { formatMoney } from "../core/money.ts";
import type { DayCache, DaySums } from "./day_cache.ts";
import {
  type Counter,
  COUNTERS,
  type Dimension,
  LOG_INDEXED_SINCE,
  type LogIndex,
  type RequestLogEntry,
} from "./log_entry.ts";
import { indexRefs, refKey } from "./log_index.ts";

/** What totals are grouped by: an aggregation dimension, a token's owner, or the day. */
export type GroupBy = Dimension | "owner" | "day";

/** The counters of a row that are plain counts; cost is a decimal string. */
type Count = Exclude<Counter, "cost">;

/**
 * One row of totals; `cost` is an exact decimal string in the config's currency, and `day` is set when totals are
 * kept apart per day.
 */
export type UsageRow = { key: string; day?: string; total_tokens: number; cost: string } & Record<Count, number>;

/** A date range of UTC days, both ends included (YYYY-MM-DD). */
export interface DayRange {
  since: string;
  until: string;
}

/** The day after `day`. */
function nextDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

function emptyRow(key: string, day: string | undefined): UsageRow {
  // Built in the order a row reads best as JSON: the key (and day), the counts, then the totals.
  const row = (day === undefined ? { key } : { key, day }) as UsageRow;
  for (const counter of COUNTERS) if (counter !== "cost") row[counter] = 0;
  row.total_tokens = 0;
  row.cost = "0";
  return row;
}

/** Closed days to reuse: the cache, and the first day that may still change (days before it are closed). */
export interface ClosedDays {
  cache: DayCache;
  openSince: string;
}

/** Runs of consecutive days, as [first, last] pairs, from days in order. */
function runs(days: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (const day of days) {
    const last = out.at(-1);
    if (last && nextDay(last[1]) === day) last[1] = day;
    else out.push([day, day]);
  }
  return out;
}

/** Ranges longer than this are read whole: a closed-day cache is for the ranges people look at, not for decades. */
const MAX_CACHED_DAYS = 1000;

/** Each day's sums of `dimension` in `range`: closed days from the cache when there, the others read from KV. */
async function daySums(
  kv: Deno.Kv,
  dimension: Dimension,
  range: DayRange,
  closed: ClosedDays | undefined,
): Promise<Map<string, DaySums>> {
  const out = new Map<string, DaySums>();
  const span = (Date.parse(range.until) - Date.parse(range.since)) / 86_400_000 + 1;
  const cache = span <= MAX_CACHED_DAYS ? closed : undefined;
  const missing: string[] = [];
  if (cache) {
    for (let day = range.since; day <= range.until; day = nextDay(day)) {
      const cached = day < cache.openSince ? cache.cache.get(dimension, day) : undefined;
      if (cached) out.set(day, cached);
      else missing.push(day);
    }
  }
  // One listing per run of days to read (the whole range when there is no cache).
  const toRead: [string, string][] = cache ? runs(missing) : [[range.since, range.until]];
  for (const [first, last] of toRead) {
    const selector = { start: ["usage", dimension, first], end: ["usage", dimension, nextDay(last)] };
    for await (const entry of kv.list<Deno.KvU64>(selector, { batchSize: 500 })) {
      const [, , day, name, counter] = entry.key as [string, string, string, string, Counter];
      const names = out.get(day) ?? new Map<string, Map<Counter, bigint>>();
      const counters = names.get(name) ?? new Map<Counter, bigint>();
      counters.set(counter, (counters.get(counter) ?? 0n) + entry.value.value);
      names.set(name, counters);
      out.set(day, names);
    }
  }
  // Days without usage are not kept: reading them again finds nothing, quickly.
  for (const day of missing) {
    const sums = out.get(day);
    if (sums && day < cache!.openSince) cache!.cache.set(dimension, day, sums);
  }
  return out;
}

/**
 * Totals grouped by `by` over `range`, optionally for one name of that dimension, most spent first; with `perDay`,
 * one row per day and name (days in order, each day's rows most spent first), as a chart over time needs them.
 * With `closed`, days that can no longer change are read from KV once and then from memory.
 */
export async function usageTotals(
  kv: Deno.Kv,
  options: DayRange & {
    by: GroupBy;
    name?: string;
    perDay?: boolean;
    /** Each token's owner by token id, for `by: "owner"`: tokens without one are left out. */
    owners?: ReadonlyMap<string, string>;
    /** Only these tokens' usage (then only by token, owner or day). */
    tokens?: ReadonlySet<string>;
  },
  closed?: ClosedDays,
): Promise<UsageRow[]> {
  // Every recorded request has a group and a token, so per-day totals are the group aggregates summed per day (the
  // token aggregates when only some tokens count), and an owner's are the aggregates of the tokens they own.
  const perToken = options.by === "owner" || options.tokens !== undefined;
  const dimension: Dimension = perToken ? "token" : options.by === "day" ? "group" : options.by as Dimension;
  const rows = new Map<string, UsageRow>();
  // Cost adds up in pico-units, as bigints, and becomes a decimal string once at the end.
  const costs = new Map<string, bigint>();
  for (const [day, names] of await daySums(kv, dimension, options, closed)) {
    for (const [name, counters] of names) {
      if (options.tokens && !options.tokens.has(name)) continue;
      const label = options.by === "owner" ? options.owners?.get(name) : name;
      if (label === undefined || (options.name !== undefined && label !== options.name)) continue;
      const key = options.by === "day" ? day : label;
      const id = options.perDay ? `${day}\0${key}` : key;
      const row = rows.get(id) ?? emptyRow(key, options.perDay ? day : undefined);
      rows.set(id, row);
      for (const [counter, sum] of counters) {
        if (counter === "cost") {
          costs.set(id, (costs.get(id) ?? 0n) + sum);
          continue;
        }
        const value = Number(sum);
        row[counter] += value;
        if (counter.endsWith("_tokens")) row.total_tokens += value;
      }
    }
  }
  for (const [id, pico] of costs) rows.get(id)!.cost = formatMoney(pico);
  const out = [...rows.entries()];
  // Who spent the most comes first, then who used the most tokens.
  const spent = (id: string) => costs.get(id) ?? 0n;
  const largest = ([idA, a]: [string, UsageRow], [idB, b]: [string, UsageRow]) =>
    spent(idB) > spent(idA)
      ? 1
      : spent(idB) < spent(idA)
      ? -1
      : b.total_tokens - a.total_tokens || a.key.localeCompare(b.key);
  if (options.perDay) out.sort((a, b) => a[1].day!.localeCompare(b[1].day!) || largest(a, b));
  else if (options.by === "day") out.sort((a, b) => a[1].key.localeCompare(b[1].key));
  else out.sort(largest);
  return out.map(([, row]) => row);
}

/** Filters for the request log; every field is optional. */
export interface LogFilter {
  /** Epoch milliseconds, inclusive. */
  since?: number;
  /** Epoch milliseconds, exclusive. */
  until?: number;
  token_id?: string;
  /** A token owner's email: the requests of all their tokens. */
  owner?: string;
  group?: string;
  model?: string;
  session_id?: string;
  status?: number;
  /** Not indexed: applied to the entries the other filters read. */
  upstream?: string;
  /** Not indexed, like `upstream`. */
  affinity?: string;
  /** Most entries returned. */
  limit: number;
}

/** A log entry as KV holds it: entries written before costs, pins or owners were recorded lack those fields. */
type StoredEntry =
  & Omit<RequestLogEntry, "cost" | "unpriced" | "affinity" | "owner">
  & Partial<Pick<RequestLogEntry, "cost" | "unpriced" | "affinity" | "owner">>;

// A filter that matches little must not read the whole log for one page.
const MAX_SCANNED = 20_000;
/** Log entries fetched at once through an index (KV reads at most 10 keys per call). */
const FETCH_AT_ONCE = 50;

/** An entry as the log reads: older entries read as costing nothing and having had no pin and no owner. */
function complete(entry: StoredEntry): RequestLogEntry {
  return {
    ...entry,
    owner: entry.owner ?? null,
    cost: entry.cost ?? "0",
    unpriced: entry.unpriced ?? false,
    affinity: entry.affinity ?? null,
  };
}

/** Which index serves a filter: the one likely to match least. */
const INDEX_ORDER: readonly [LogIndex, keyof LogFilter][] = [
  ["session", "session_id"],
  ["token", "token_id"],
  ["owner", "owner"],
  ["status", "status"],
  ["model", "model"],
];

function matches(entry: StoredEntry, filter: LogFilter): boolean {
  return (filter.token_id === undefined || entry.token_id === filter.token_id) &&
    (filter.owner === undefined || (entry.owner ?? null) === filter.owner) &&
    (filter.group === undefined || entry.group === filter.group) &&
    (filter.model === undefined || entry.model === filter.model) &&
    (filter.session_id === undefined || entry.session_id === filter.session_id) &&
    (filter.status === undefined || entry.status === filter.status) &&
    (filter.upstream === undefined || entry.upstream === filter.upstream) &&
    (filter.affinity === undefined || entry.affinity === filter.affinity);
}

/** Entries in [since, until) read from the log itself, newest first, into `out`. */
async function scan(kv: Deno.Kv, filter: LogFilter, since: number, until: number, out: RequestLogEntry[]) {
  let scanned = 0;
  const selector = { start: ["request_log", since], end: ["request_log", until] };
  for await (const { value } of kv.list<StoredEntry>(selector, { reverse: true, batchSize: 500 })) {
    if (++scanned > MAX_SCANNED || out.length >= filter.limit) break;
    if (matches(value, filter)) out.push(complete(value));
  }
}

/** Entries in [since, until) found through an index, newest first, into `out`. */
async function throughIndex(
  kv: Deno.Kv,
  filter: LogFilter,
  found: [LogIndex, string | number],
  range: { since: number; until: number },
  out: RequestLogEntry[],
) {
  let pending: Deno.KvKey[] = [];
  const load = async () => {
    const chunks = [];
    for (let i = 0; i < pending.length; i += 10) chunks.push(kv.getMany<StoredEntry[]>(pending.slice(i, i + 10)));
    pending = [];
    for (const entry of (await Promise.all(chunks)).flat()) {
      if (entry.value && matches(entry.value, filter) && out.length < filter.limit) out.push(complete(entry.value));
    }
  };
  for await (const ref of indexRefs(kv, found, range, MAX_SCANNED)) {
    pending.push(refKey(ref));
    if (pending.length >= Math.min(FETCH_AT_ONCE, filter.limit - out.length)) await load();
    if (out.length >= filter.limit) return;
  }
  await load();
}

/**
 * Recent log entries that match, newest first. A filter on token, owner, model, session or status reads only the
 * entries its index names; entries older than the indexes (written by an earlier version) are found by reading the log.
 */
export async function requestLog(kv: Deno.Kv, filter: LogFilter): Promise<RequestLogEntry[]> {
  const out: RequestLogEntry[] = [];
  const since = filter.since ?? 0;
  const until = filter.until ?? Number.MAX_SAFE_INTEGER;
  const found = INDEX_ORDER.find(([, field]) => filter[field] !== undefined);
  const indexedSince = found ? (await kv.get<number>(LOG_INDEXED_SINCE)).value : null;
  if (!found || indexedSince === null) {
    await scan(kv, filter, since, until, out);
    return out;
  }
  const value = filter[found[1]] as string | number;
  if (until > indexedSince) {
    await throughIndex(kv, filter, [found[0], value], { since: Math.max(since, indexedSince), until }, out);
  }
  if (out.length < filter.limit && since < indexedSince) {
    await scan(kv, filter, since, Math.min(until, indexedSince), out);
  }
  return out;
}

/** @module Reading usage back: totals per token, group, model, session or day over a date range, and the log. */
import { formatMoney } from "../core/money.ts";
import { type Counter, COUNTERS, type Dimension, type RequestLogEntry } from "./recorder.ts";

/** What totals are grouped by: an aggregation dimension, or the day. */
export type GroupBy = Dimension | "day";

/** The counters of a row that are plain counts; cost is a decimal string. */
type Count = Exclude<Counter, "cost">;

/** One row of totals; `cost` is an exact decimal string in the config's currency. */
export type UsageRow = { key: string; total_tokens: number; cost: string } & Record<Count, number>;

/** A date range of UTC days, both ends included (YYYY-MM-DD). */
export interface DayRange {
  since: string;
  until: string;
}

/** The day after `day`. */
function nextDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

function emptyRow(key: string): UsageRow {
  // Built in the order a row reads best as JSON: the counts, then the totals.
  const row = { key } as UsageRow;
  for (const counter of COUNTERS) if (counter !== "cost") row[counter] = 0;
  row.total_tokens = 0;
  row.cost = "0";
  return row;
}

/** Totals grouped by `by` over `range`, optionally for one name of that dimension, largest first. */
export async function usageTotals(
  kv: Deno.Kv,
  options: DayRange & { by: GroupBy; name?: string },
): Promise<UsageRow[]> {
  // Every recorded request has a group, so per-day totals are the group aggregates summed per day.
  const dimension: Dimension = options.by === "day" ? "group" : options.by;
  const rows = new Map<string, UsageRow>();
  // Cost adds up in pico-units, as bigints, and becomes a decimal string once at the end.
  const costs = new Map<string, bigint>();
  const selector = {
    start: ["usage", dimension, options.since],
    end: ["usage", dimension, nextDay(options.until)],
  };
  for await (const entry of kv.list<Deno.KvU64>(selector)) {
    const [, , day, name, counter] = entry.key as [string, string, string, string, Counter];
    if (options.name !== undefined && name !== options.name) continue;
    const key = options.by === "day" ? day : name;
    const row = rows.get(key) ?? emptyRow(key);
    rows.set(key, row);
    if (counter === "cost") {
      costs.set(key, (costs.get(key) ?? 0n) + entry.value.value);
      continue;
    }
    const value = Number(entry.value.value);
    row[counter] += value;
    if (counter.endsWith("_tokens")) row.total_tokens += value;
  }
  for (const [key, pico] of costs) rows.get(key)!.cost = formatMoney(pico);
  const out = [...rows.values()];
  if (options.by === "day") return out.sort((a, b) => a.key.localeCompare(b.key));
  // Who spent the most comes first, then who used the most tokens.
  const spent = (row: UsageRow) => costs.get(row.key) ?? 0n;
  return out.sort((a, b) =>
    spent(b) > spent(a) ? 1 : spent(b) < spent(a) ? -1 : b.total_tokens - a.total_tokens || a.key.localeCompare(b.key)
  );
}

/** Filters for the request log; every field is optional. */
export interface LogFilter {
  /** Epoch milliseconds, inclusive. */
  since?: number;
  /** Epoch milliseconds, exclusive. */
  until?: number;
  token_id?: string;
  group?: string;
  model?: string;
  session_id?: string;
  status?: number;
  /** Most entries returned. */
  limit: number;
}

/** A log entry as KV holds it: entries written before costs were recorded have neither cost field. */
type StoredEntry = Omit<RequestLogEntry, "cost" | "unpriced"> & Partial<Pick<RequestLogEntry, "cost" | "unpriced">>;

// A filter that matches little must not read the whole log for one page.
const MAX_SCANNED = 20_000;

/** Recent log entries that match, newest first. */
export async function requestLog(kv: Deno.Kv, filter: LogFilter): Promise<RequestLogEntry[]> {
  const out: RequestLogEntry[] = [];
  const selector = {
    start: ["request_log", filter.since ?? 0],
    end: ["request_log", filter.until ?? Number.MAX_SAFE_INTEGER],
  };
  let scanned = 0;
  for await (const { value } of kv.list<StoredEntry>(selector, { reverse: true, batchSize: 500 })) {
    if (++scanned > MAX_SCANNED) break;
    if (filter.token_id !== undefined && value.token_id !== filter.token_id) continue;
    if (filter.group !== undefined && value.group !== filter.group) continue;
    if (filter.model !== undefined && value.model !== filter.model) continue;
    if (filter.session_id !== undefined && value.session_id !== filter.session_id) continue;
    if (filter.status !== undefined && value.status !== filter.status) continue;
    // Entries written before costs were recorded read as costing nothing.
    out.push({ ...value, cost: value.cost ?? "0", unpriced: value.unpriced ?? false });
    if (out.length >= filter.limit) break;
  }
  return out;
}

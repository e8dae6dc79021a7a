/**
 * @module Usage accounting as an observer: each finished request becomes a request-log entry (no prompt or
 * completion text, expiring after the configured days, indexed by token, model, session and status) and adds to
 * per-day aggregates by token, group, model and session, its cost included. Both are batched in memory and written
 * about once a second with KV atomic sums, off the request path; `close()` writes what is left. A batch the store
 * will not take is kept for the next flush. A crash loses at most one interval of counts.
 */
import type { Exchange, Observer } from "../core/exchange.ts";
import { createKvWriter, type KvWriter } from "../core/kv_write.ts";
import { formatMoney, parseMoney } from "../core/money.ts";
import { commitAll, type KvMutation } from "./commits.ts";
import { costOf, isUnpriced } from "./cost.ts";

/** One request as the log keeps it. */
export interface RequestLogEntry {
  request_id: string;
  time: string;
  token_id: string;
  group: string | null;
  model: string;
  /** With `model`, the deployment that served the request (the last one tried, when none did). */
  upstream: string | null;
  /** How the session's pin turned out (`kept`, `made`, `moved`); null when the request had no session pin. */
  affinity: string | null;
  protocol: string;
  route: string;
  stream: boolean;
  /** "websocket" for a response made on a Responses socket; absent for an HTTP request. */
  transport?: "websocket";
  status: number;
  error: string | null;
  duration_ms: number | null;
  ttfb_ms: number | null;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** False when the stream was cut or failed before its usage was final: the counts are what was seen. */
  usage_complete: boolean;
  session_id: string | null;
  /** What the tokens cost at the deployment's price, as an exact decimal string in the config's currency. */
  cost: string;
  /** True when tokens were used on a deployment without a price, so `cost` (then "0") leaves them out. */
  unpriced: boolean;
}

/** The dimensions usage is aggregated by, each per UTC day. */
export const DIMENSIONS = ["token", "group", "model", "session"] as const;
/** One aggregation dimension. */
export type Dimension = typeof DIMENSIONS[number];

/** The counters of each aggregate. */
export const COUNTERS = [
  "requests",
  "errors",
  "incomplete",
  "input_tokens",
  "output_tokens",
  "cache_read_input_tokens",
  "cache_creation_input_tokens",
  "unpriced",
  /** In pico-units (10^-12 of the currency), so sums of any number of requests stay exact. */
  "cost",
] as const;
/** One aggregate counter. */
export type Counter = typeof COUNTERS[number];

/** KV key of one aggregate counter: ["usage", dimension, day, name, counter]. */
export function usageKey(dimension: Dimension, day: string, name: string, counter: Counter): Deno.KvKey {
  return ["usage", dimension, day, name, counter];
}

/** KV key of one log entry, ordered by time: ["request_log", started_at, request_id]. */
export function logKey(startedAt: number, requestId: string): Deno.KvKey {
  return ["request_log", startedAt, requestId];
}

/** The log's filters that have an index, so a filtered read touches only matching entries. */
const LOG_INDEXES = ["token", "model", "session", "status"] as const;
/** One indexed filter of the log. */
export type LogIndex = typeof LOG_INDEXES[number];

/** KV key of one index entry: ["request_log_by", index, value, started_at, request_id]; its value is null. */
export function logIndexKey(index: LogIndex, value: string | number, startedAt: number, requestId: string): Deno.KvKey {
  return ["request_log_by", index, value, startedAt, requestId];
}

/** Where the time of the first indexed entry is kept: entries before it (written before the indexes) are scanned. */
export const LOG_INDEXED_SINCE: Deno.KvKey = ["request_log_indexed_since"];

/** The index keys of one entry. */
function indexKeys(entry: RequestLogEntry): Deno.KvKey[] {
  const at = Date.parse(entry.time);
  const values: Record<LogIndex, string | number | null> = {
    token: entry.token_id,
    model: entry.model,
    session: entry.session_id,
    status: entry.status,
  };
  return LOG_INDEXES.flatMap((index) => {
    const value = values[index];
    return value === null ? [] : [logIndexKey(index, value, at, entry.request_id)];
  });
}

/** The token-counting route: free upstream, so neither recorded nor limited. */
export const COUNT_TOKENS_ROUTE = "/v1/messages/count_tokens";

/** The log entry of a finished exchange, or undefined for requests that are not model calls by a token. */
export function toLogEntry(exchange: Exchange): RequestLogEntry | undefined {
  if (!exchange.token_id || !exchange.model || exchange.route === COUNT_TOKENS_ROUTE) return undefined;
  const usage = exchange.usage;
  return {
    request_id: exchange.request_id,
    time: new Date(exchange.started_at).toISOString(),
    token_id: exchange.token_id,
    group: exchange.group ?? null,
    model: exchange.model,
    upstream: exchange.upstream ?? null,
    affinity: exchange.affinity ?? null,
    protocol: exchange.protocol,
    route: exchange.route,
    stream: exchange.stream,
    ...exchange.transport === "websocket" ? { transport: "websocket" as const } : {},
    status: exchange.status,
    error: exchange.error ?? null,
    duration_ms: exchange.duration_ms ?? null,
    ttfb_ms: exchange.ttfb_ms ?? null,
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cache_read_input_tokens: usage?.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: usage?.cache_creation_input_tokens ?? 0,
    usage_complete: usage !== undefined && exchange.usage_complete !== false,
    session_id: exchange.session_id ?? null,
    cost: formatMoney(costOf(usage, exchange.price)),
    unpriced: isUnpriced(exchange),
  };
}

/** The counters one log entry adds. */
export function countersOf(entry: RequestLogEntry): Record<Counter, bigint> {
  // A client's own cancellation (499, client_closed) is not an error of the gateway's or the upstream's.
  const failed = entry.error !== "client_closed" && (entry.status >= 400 || entry.error !== null);
  return {
    requests: 1n,
    errors: failed ? 1n : 0n,
    // A stream that started (200) but was cut or failed: its token counts are only what was seen.
    incomplete: entry.status < 400 && !entry.usage_complete ? 1n : 0n,
    input_tokens: BigInt(entry.input_tokens),
    output_tokens: BigInt(entry.output_tokens),
    cache_read_input_tokens: BigInt(entry.cache_read_input_tokens),
    cache_creation_input_tokens: BigInt(entry.cache_creation_input_tokens),
    unpriced: entry.unpriced ? 1n : 0n,
    cost: parseMoney(entry.cost) ?? 0n,
  };
}

/** The usage observer plus its batch control. */
export interface UsageRecorder extends Observer {
  /** Writes everything batched so far. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

/** Options for {@linkcode usageRecorder}. */
export interface UsageRecorderOptions {
  /** Commits with bounded retries when other processes write the same KV; by default one logging to `log`. */
  writes?: KvWriter;
  flushMs: number;
  logDays: number;
  log(line: Record<string, unknown>): void;
  /** Request-log entries kept at most while the store will not take them; totals are always kept. */
  maxKeptEntries?: number;
}

/** One aggregate's pending sum. */
interface Sum {
  id: string;
  key: Deno.KvKey;
  value: bigint;
}

/** The counters of the requests that share one day, token, group, model and session. */
interface Tally {
  day: string;
  names: Record<Dimension, string | null>;
  counters: Record<Counter, bigint>;
}

const NO_COUNTS = Object.fromEntries(COUNTERS.map((counter) => [counter, 0n])) as Record<Counter, bigint>;

/** One write of a batch: a request-log entry with its index keys, or an aggregate's sum. */
type Mutation = { entry: RequestLogEntry } | { sum: Sum };

/** A recorder that batches into `kv`. */
export function usageRecorder(kv: Deno.Kv, options: UsageRecorderOptions): UsageRecorder {
  const maxKept = options.maxKeptEntries ?? 100_000;
  const writes = options.writes ?? createKvWriter({ log: options.log });
  let entries: RequestLogEntry[] = [];
  let sums = new Map<string, Sum>();
  // Requests of the same day, token, group, model and session add to one set of counters; they are spread over the
  // dimensions' sums only at a flush, so a request costs one lookup instead of one per dimension and counter.
  let tallies = new Map<string, Tally>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> = Promise.resolve();
  let marked = false;

  function addSum(id: string, key: Deno.KvKey, value: bigint): void {
    const sum = sums.get(id);
    if (sum) sum.value += value;
    else sums.set(id, { id, key, value });
  }

  function add(dimension: Dimension, day: string, name: string, counter: Counter, value: bigint): void {
    // Only the name is client input and it comes last; the other parts are from fixed sets, so ids cannot collide.
    addSum(`${dimension}\0${day}\0${counter}\0${name}`, usageKey(dimension, day, name, counter), value);
  }

  /** Adds the requests tallied since the last flush to the dimensions' sums. */
  function spread(): void {
    for (const { day, names, counters } of tallies.values()) {
      for (const counter of COUNTERS) {
        const value = counters[counter];
        if (value === 0n) continue;
        for (const dimension of DIMENSIONS) {
          const name = names[dimension];
          if (name !== null) add(dimension, day, name, counter, value);
        }
      }
    }
    tallies = new Map();
  }

  /** Puts mutations the store would not take back into the next batch. */
  function keep(rest: Mutation[]): void {
    const kept: RequestLogEntry[] = [];
    for (const mutation of rest) {
      if ("entry" in mutation) kept.push(mutation.entry);
      else addSum(mutation.sum.id, mutation.sum.key, mutation.sum.value);
    }
    entries = [...kept, ...entries];
    // Totals are small and are what usage reports read; the log's detail gives way first when the store stays away.
    const over = entries.length - maxKept;
    if (over > 0) {
      entries = entries.slice(over);
      options.log({ level: "warn", event: "usage_log_entries_dropped", count: over });
    }
    const deferred = { entries: kept.length, sums: rest.length - kept.length };
    options.log({ level: "warn", event: "usage_flush_deferred", ...deferred });
    timer ??= setTimeout(flush, options.flushMs);
  }

  /** Marks when the log's indexes begin; only the first writer ever sets it, later ones change nothing. */
  async function mark(batch: Mutation[]): Promise<void> {
    if (marked) return;
    // A loop, not Math.min(...times): a batch may hold more entries than one call takes arguments.
    let first = Infinity;
    for (const mutation of batch) if ("entry" in mutation) first = Math.min(first, Date.parse(mutation.entry.time));
    if (first === Infinity) return;
    marked = true;
    await writes.write("usage_flush", async () => {
      await kv.atomic().check({ key: LOG_INDEXED_SINCE, versionstamp: null }).set(LOG_INDEXED_SINCE, first).commit();
    }).catch(() => marked = false);
  }

  /** The KV writes of one batch item: an entry with its index keys, or a sum. */
  function mutationsOf(mutation: Mutation): KvMutation[] {
    if ("sum" in mutation) return [{ sum: mutation.sum.key, value: mutation.sum.value }];
    const { entry } = mutation;
    const expireIn = options.logDays * 86_400_000;
    return [
      { set: logKey(Date.parse(entry.time), entry.request_id), value: entry, expireIn },
      ...indexKeys(entry).map((key) => ({ set: key, value: null, expireIn })),
    ];
  }

  async function write(batch: Mutation[]): Promise<void> {
    await mark(batch);
    const rest = await commitAll(kv, batch, { writes, operation: "usage_flush", mutations: mutationsOf });
    if (rest.length > 0) keep(rest);
  }

  function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    spread();
    const batch: Mutation[] = [...entries.map((entry) => ({ entry })), ...[...sums.values()].map((sum) => ({ sum }))];
    entries = [];
    sums = new Map();
    // Batches are written one after another so `close()` can wait for all of them.
    writing = writing.then(() => batch.length ? write(batch) : undefined);
    return writing;
  }

  return {
    finish(exchange) {
      const entry = toLogEntry(exchange);
      if (!entry) return;
      entries.push(entry);
      const day = entry.time.slice(0, 10);
      const id = JSON.stringify([day, entry.token_id, entry.group, entry.model, entry.session_id]);
      let tally = tallies.get(id);
      if (!tally) {
        const names = { token: entry.token_id, group: entry.group, model: entry.model, session: entry.session_id };
        tally = { day, names, counters: { ...NO_COUNTS } };
        tallies.set(id, tally);
      }
      const counters = countersOf(entry);
      // Only what a request adds counts; a negative count from a garbled answer takes nothing away.
      for (const counter of COUNTERS) if (counters[counter] > 0n) tally.counters[counter] += counters[counter];
      timer ??= setTimeout(flush, options.flushMs);
    },
    flush,
    async close() {
      await flush();
      // Nothing more will try: what the store still refuses is lost with the process, so say how much.
      clearTimeout(timer);
      timer = undefined;
      if (entries.length || sums.size) {
        options.log({ level: "error", event: "usage_unflushed_at_exit", entries: entries.length, sums: sums.size });
      }
    },
  };
}

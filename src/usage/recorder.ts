/**
 * @module Usage accounting as an observer: each finished request becomes a request-log entry (no prompt or
 * completion text, expiring after the configured days, indexed by token, owner, model, session and status, one index
 * key per value and batch) and adds to
 * per-day aggregates by token, group, model and session (a tool call's by its server and tool), cost included. Both are batched in memory and written
 * about once a second with KV atomic sums, off the request path; `close()` writes what is left. A batch the store
 * will not take (busy, contended, its disk full or failing) is kept for the next flush, with one log line when such an
 * episode begins and one when it ends. A crash loses at most one interval of counts.
 */
import type { Observer } from "../core/exchange.ts";
import { createKvWriter, type KvWriter } from "../core/kv_write.ts";
import { commitAll, type KvMutation } from "./commits.ts";
import {
  type Counter,
  COUNTERS,
  countersOf,
  type Dimension,
  DIMENSIONS,
  LOG_INDEXED_SINCE,
  logKey,
  namesOf,
  type RequestLogEntry,
  toLogEntry,
  usageKey,
} from "./log_entry.ts";
import { type IndexGroup, indexGroups } from "./log_index.ts";

/** The usage observer plus its batch control. */
export interface UsageRecorder extends Observer {
  /** Writes everything batched so far. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
  /** Request-log entries kept in memory because the store did not take them yet. */
  waiting(): number;
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

/** The counters of the requests that share one day and one name in every dimension. */
interface Tally {
  day: string;
  names: Record<Dimension, string | null>;
  counters: Record<Counter, bigint>;
}

/** The most a KV sum takes in one mutation. */
const MAX_SUM = 2n ** 64n - 1n;

const NO_COUNTS = Object.fromEntries(COUNTERS.map((counter) => [counter, 0n])) as Record<Counter, bigint>;

/** One write of a batch: a request-log entry, an index key naming entries, or an aggregate's sum. */
type Mutation = { entry: RequestLogEntry } | { group: IndexGroup } | { sum: Sum };

/** A recorder that batches into `kv`. */
export function usageRecorder(kv: Deno.Kv, options: UsageRecorderOptions): UsageRecorder {
  const maxKept = options.maxKeptEntries ?? 100_000;
  const writes = options.writes ?? createKvWriter({ log: options.log });
  // Entries finished since the last flush; entries and index keys of earlier batches the store did not take yet. An
  // entry's index keys are made once, in the first batch it is in, so a batch written in part is not indexed twice.
  let entries: RequestLogEntry[] = [];
  let keptEntries: RequestLogEntry[] = [];
  let keptGroups: IndexGroup[] = [];
  let sums = new Map<string, Sum>();
  // Requests of the same day, token, group, model and session add to one set of counters; they are spread over the
  // dimensions' sums only at a flush, so a request costs one lookup instead of one per dimension and counter.
  let tallies = new Map<string, Tally>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> = Promise.resolve();
  let marked = false;
  // While the store will not take batches: when that began and how many flushes it refused. Its give-ups are counted
  // but not logged one by one: a full disk would otherwise log every second until it frees.
  let refusing: { since: number; flushes: number } | undefined;

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
    const groups: IndexGroup[] = [];
    for (const mutation of rest) {
      if ("entry" in mutation) kept.push(mutation.entry);
      else if ("group" in mutation) groups.push(mutation.group);
      else addSum(mutation.sum.id, mutation.sum.key, mutation.sum.value);
    }
    keptEntries = [...kept, ...keptEntries];
    keptGroups = [...groups, ...keptGroups];
    // Totals are small and are what usage reports read; the log's detail gives way first when the store stays away.
    const over = keptEntries.length - maxKept;
    if (over > 0) {
      keptEntries = keptEntries.slice(over);
      options.log({ level: "warn", event: "usage_log_entries_dropped", count: over });
    }
    // An entry whose index key is dropped is still in the log, found by a read of the log itself.
    if (keptGroups.length > maxKept) keptGroups = keptGroups.slice(keptGroups.length - maxKept);
    if (refusing) refusing.flushes++;
    else {
      refusing = { since: performance.now(), flushes: 1 };
      const deferred = {
        entries: kept.length,
        sums: rest.length - kept.length - groups.length,
        index_keys: groups.length,
      };
      options.log({ level: "warn", event: "usage_flush_deferred", ...deferred });
    }
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
    // Quiet: the batch written next says whether the store takes writes, once per episode.
    await writes.write("usage_flush", async () => {
      await kv.atomic().check({ key: LOG_INDEXED_SINCE, versionstamp: null }).set(LOG_INDEXED_SINCE, first).commit();
    }, { quiet: true }).catch(() => marked = false);
  }

  /** The KV write of one batch item. */
  function mutationsOf(mutation: Mutation): KvMutation[] {
    if ("sum" in mutation) return [{ sum: mutation.sum.key, value: mutation.sum.value }];
    // An index key lives as long as the newest entry it names; the older ones expire a little before it.
    const expireIn = options.logDays * 86_400_000;
    if ("group" in mutation) return [{ set: mutation.group.key, value: mutation.group.refs, expireIn }];
    const { entry } = mutation;
    return [{ set: logKey(Date.parse(entry.time), entry.request_id), value: entry, expireIn }];
  }

  /** Says what of the usage is lost: the request of an entry, the key of a sum, and why. */
  function dropped(what: RequestLogEntry | IndexGroup | Sum, why: unknown): void {
    const item = "request_id" in what
      ? { request_id: what.request_id, upstream: what.upstream }
      : "refs" in what
      ? { index: what.key[1], entries: what.refs.length }
      : { dimension: what.key[1], day: what.key[2], counter: what.key[4] };
    const error = typeof why === "string" ? why : String((why as Error)?.name ?? why);
    options.log({ level: "warn", event: "usage_entry_dropped", ...item, error });
  }

  async function write(batch: Mutation[]): Promise<void> {
    await mark(batch);
    const rest = await commitAll(kv, batch, {
      writes,
      operation: "usage_flush",
      mutations: mutationsOf,
      dropped: (mutation, why) =>
        dropped("entry" in mutation ? mutation.entry : "group" in mutation ? mutation.group : mutation.sum, why),
      quiet: refusing !== undefined,
    });
    if (rest.length > 0) return keep(rest);
    if (!refusing) return;
    // Each batch carries everything kept before it: this one landing means nothing is waiting any more.
    const resumed = { after_ms: Math.round(performance.now() - refusing.since), refused_flushes: refusing.flushes };
    refusing = undefined;
    options.log({ level: "info", event: "usage_flush_resumed", ...resumed });
  }

  function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    spread();
    // Index keys before the entries they name: a read skips a named entry not written yet, and meets it once it is.
    const batch: Mutation[] = [
      ...[...keptGroups, ...indexGroups(entries)].map((group) => ({ group })),
      ...[...keptEntries, ...entries].map((entry) => ({ entry })),
      ...[...sums.values()].map((sum) => ({ sum })),
    ];
    entries = [];
    keptEntries = [];
    keptGroups = [];
    sums = new Map();
    // Batches are written one after another so `close()` can wait for all of them.
    writing = writing.then(() => batch.length ? write(batch) : undefined);
    return writing;
  }

  return {
    finish(exchange) {
      const entry = toLogEntry(exchange);
      if (!entry) return;
      const day = entry.time.slice(0, 10);
      const names = namesOf(entry);
      const id = JSON.stringify([day, ...DIMENSIONS.map((dimension) => names[dimension])]);
      const counters = countersOf(entry);
      const before = tallies.get(id)?.counters ?? NO_COUNTS;
      // A count no 64-bit KV sum can take (a cost at an absurd price) would make the store refuse the sum, and with
      // it the other requests of the same names: the entry is dropped alone, and said so.
      const over = COUNTERS.find((counter) => before[counter] + counters[counter] > MAX_SUM);
      if (over) return dropped(entry, over);
      entries.push(entry);
      let tally = tallies.get(id);
      if (!tally) {
        tally = { day, names, counters: { ...NO_COUNTS } };
        tallies.set(id, tally);
      }
      // Only what a request adds counts; a negative count from a garbled answer takes nothing away.
      for (const counter of COUNTERS) if (counters[counter] > 0n) tally.counters[counter] += counters[counter];
      timer ??= setTimeout(flush, options.flushMs);
    },
    flush,
    waiting: () => keptEntries.length,
    async close() {
      await flush();
      // Nothing more will try: what the store still refuses is lost with the process, so say how much.
      clearTimeout(timer);
      timer = undefined;
      if (keptEntries.length || keptGroups.length || sums.size) {
        const left = { entries: keptEntries.length, index_keys: keptGroups.length, sums: sums.size };
        options.log({ level: "error", event: "usage_unflushed_at_exit", ...left });
      }
    },
  };
}

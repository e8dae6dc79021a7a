/**
 * @module Reading the request log and the totals back from KV: filters through the log's indexes give what a full
 * read would, read only matching entries, still find entries written before the indexes; totals per day; and closed
 * days read from KV once.
 */
import assert from "node:assert/strict";
import type { Exchange } from "../../src/core/exchange.ts";
import { dayCache, type DaySums, openSince } from "../../src/usage/day_cache.ts";
import { type LogFilter, requestLog, usageTotals } from "../../src/usage/query.ts";
import { logKey, type RequestLogEntry, toLogEntry } from "../../src/usage/log_entry.ts";
import { usageRecorder } from "../../src/usage/recorder.ts";
import { createKvWriter, KvWriteFailed, type KvWriter } from "../../src/core/kv_write.ts";
import type { LogRef } from "../../src/usage/log_index.ts";

const T0 = Date.parse("2026-03-04T05:06:07Z");

function exchange(i: number, extra: Partial<Exchange> = {}): Exchange {
  return {
    request_id: `req_${String(i).padStart(5, "0")}`,
    started_at: T0 + i * 1000,
    method: "POST",
    route: "/v1/messages",
    protocol: "anthropic",
    token_id: `tok_${i % 3}`,
    group: "g",
    model: ["m1", "m2"][i % 2],
    session_id: i % 5 === 0 ? `s${i % 4}` : undefined,
    stream: false,
    attempts: [],
    status: i % 7 === 0 ? 429 : 200,
    usage: { input_tokens: i, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    usage_complete: true,
    ...extra,
  };
}

/** Records `exchanges` into `kv` through the usage recorder, as the gateway does. */
async function record(kv: Deno.Kv, exchanges: Exchange[]): Promise<void> {
  const recorder = usageRecorder(kv, {
    flushMs: 60_000,
    logDays: 30,
    log: (line) => assert.fail(JSON.stringify(line)),
  });
  for (const e of exchanges) recorder.finish!(e);
  await recorder.close();
}

/** What a filter must give: every matching entry, newest first, up to the limit. */
function expected(entries: RequestLogEntry[], filter: LogFilter): string[] {
  return entries
    .filter((e) =>
      (filter.token_id === undefined || e.token_id === filter.token_id) &&
      (filter.model === undefined || e.model === filter.model) &&
      (filter.session_id === undefined || e.session_id === filter.session_id) &&
      (filter.status === undefined || e.status === filter.status) &&
      Date.parse(e.time) >= (filter.since ?? 0) && Date.parse(e.time) < (filter.until ?? Infinity)
    )
    .sort((a, b) => b.time.localeCompare(a.time))
    .slice(0, filter.limit)
    .map((e) => e.request_id);
}

const FILTERS: LogFilter[] = [
  { limit: 10 },
  { token_id: "tok_1", limit: 25 },
  { model: "m2", status: 429, limit: 100 },
  { session_id: "s0", limit: 3 },
  { session_id: "s2", token_id: "tok_1", limit: 100 },
  { status: 429, since: T0 + 50_000, until: T0 + 120_000, limit: 100 },
  { token_id: "nobody", limit: 10 },
];

Deno.test("every filter of the log gives what reading the whole log would, newest first", async () => {
  using kv = await Deno.openKv(":memory:");
  const exchanges = Array.from({ length: 150 }, (_, i) => exchange(i));
  await record(kv, exchanges);
  const entries = exchanges.map((e) => toLogEntry(e)!);
  for (const filter of FILTERS) {
    const got = (await requestLog(kv, filter)).map((e) => e.request_id);
    assert.deepEqual(got, expected(entries, filter), JSON.stringify(filter));
  }
});

/** A view of `kv` that counts the entries each prefix of a listing gave. */
function countingKv(kv: Deno.Kv): { kv: Deno.Kv; listed: Map<string, number> } {
  const listed = new Map<string, number>();
  const view = {
    get: kv.get.bind(kv),
    getMany: kv.getMany.bind(kv),
    async *list(selector: Deno.KvListSelector, options?: Deno.KvListOptions) {
      for await (const entry of kv.list(selector, options)) {
        listed.set(String(entry.key[0]), (listed.get(String(entry.key[0])) ?? 0) + 1);
        yield entry;
      }
    },
  };
  return { kv: view as unknown as Deno.Kv, listed };
}

Deno.test("a filter that matches one entry in a thousand reads that entry, not the log", async () => {
  using kv = await Deno.openKv(":memory:");
  const exchanges = Array.from({ length: 1000 }, (_, i) => exchange(i, { session_id: i === 17 ? "rare" : undefined }));
  await record(kv, exchanges);
  const counting = countingKv(kv);
  const found = await requestLog(counting.kv, { session_id: "rare", limit: 100 });
  assert.deepEqual(found.map((e) => e.request_id), ["req_00017"]);
  assert.equal(counting.listed.get("request_log") ?? 0, 0);
  assert.equal(counting.listed.get("request_log_by"), 1);
  const failed = await requestLog(counting.kv, { status: 429, limit: 5 });
  assert.deepEqual(failed.map((e) => e.request_id), ["req_00994", "req_00987", "req_00980", "req_00973", "req_00966"]);
  assert.equal(counting.listed.get("request_log") ?? 0, 0);
});

Deno.test("entries written before the log had indexes are still found by a filter, once each", async () => {
  using kv = await Deno.openKv(":memory:");
  // An earlier version wrote the log without indexes.
  const old = Array.from({ length: 20 }, (_, i) => toLogEntry(exchange(i))!);
  for (const entry of old) await kv.set(logKey(Date.parse(entry.time), entry.request_id), entry);
  const fresh = Array.from({ length: 20 }, (_, i) => exchange(100 + i));
  await record(kv, fresh);
  const all = [...old, ...fresh.map((e) => toLogEntry(e)!)];
  for (const filter of FILTERS) {
    const got = (await requestLog(kv, filter)).map((e) => e.request_id);
    assert.deepEqual(got, expected(all, filter), JSON.stringify(filter));
  }
});

Deno.test("filters give the whole log's answer over batches whose entries interleave in time, old and new keys mixed", async () => {
  using kv = await Deno.openKv(":memory:");
  // Written by an earlier version: an index key per entry, its value null.
  const legacy = Array.from({ length: 10 }, (_, i) => toLogEntry(exchange(300 + i, { started_at: T0 + 20_500 + i }))!);
  for (const entry of legacy) {
    const at = Date.parse(entry.time);
    await kv.set(logKey(at, entry.request_id), entry);
    await kv.set(["request_log_by", "token", entry.token_id, at, entry.request_id], null);
    await kv.set(["request_log_by", "status", entry.status, at, entry.request_id], null);
  }
  await kv.set(["request_log_indexed_since"], T0);
  const recorder = usageRecorder(kv, {
    flushMs: 60_000,
    logDays: 30,
    log: (line) => assert.fail(JSON.stringify(line)),
  });
  const batches = [
    Array.from({ length: 90 }, (_, i) => exchange(i)),
    // Long requests finish in a later batch than shorter ones that started after them.
    [exchange(200, { started_at: T0 + 5_500 }), exchange(201, { started_at: T0 + 61_500, status: 429 })],
    Array.from({ length: 90 }, (_, i) => exchange(90 + i)),
  ];
  for (const batch of batches) {
    for (const e of batch) recorder.finish!(e);
    await recorder.flush();
  }
  await recorder.close();
  const all = [...legacy, ...batches.flat().map((e) => toLogEntry(e)!)];
  const filters: LogFilter[] = [
    ...FILTERS,
    { token_id: "tok_2", limit: 1000 },
    { token_id: "tok_1", since: T0 + 5_000, until: T0 + 30_500, limit: 1000 },
    { status: 200, until: T0 + 62_000, limit: 7 },
    { status: 429, since: T0 + 61_000, limit: 1000 },
  ];
  for (const filter of filters) {
    const got = (await requestLog(kv, filter)).map((e) => e.request_id);
    assert.deepEqual(got, expected(all, filter), JSON.stringify(filter));
  }
});

Deno.test("a batch of requests by one token for one model writes one index key per value, not per request", async () => {
  using kv = await Deno.openKv(":memory:");
  await record(kv, Array.from({ length: 100 }, (_, i) => exchange(i, { token_id: "t", model: "m", status: 200 })));
  const keys = [];
  for await (const { key } of kv.list({ prefix: ["request_log_by"] })) keys.push(key.slice(1, 3).join(" "));
  // 100 requests one second apart: two groups of at most a minute per value; sessions 0-3 over 20 of the requests.
  assert.deepEqual([...new Set(keys)].sort(), [
    "model m",
    "session s0",
    "session s1",
    "session s2",
    "session s3",
    "status 200",
    "token t",
  ]);
  assert.ok(keys.length <= 16, `${keys.length} index keys`);
  const found = await requestLog(kv, { token_id: "t", limit: 1000 });
  assert.equal(found.length, 100);
});

for (const failing of [2, 3]) {
  Deno.test(`a flush the store refuses at write ${failing} is finished by the next, each entry indexed once`, async () => {
    using kv = await Deno.openKv(":memory:");
    const lines: Record<string, unknown>[] = [];
    const real = createKvWriter({ log: (line) => lines.push(line) });
    let calls = 0;
    // Write 1 marks where the indexes begin; 2 is the index keys and the first entries, 3 the other entries and sums.
    const writes: KvWriter = {
      write: (operation, attempt) =>
        ++calls === failing ? Promise.reject(new KvWriteFailed(operation, "busy")) : real.write(operation, attempt),
      giveUps: () => real.giveUps(),
    };
    const recorder = usageRecorder(kv, { writes, flushMs: 60_000, logDays: 30, log: (line) => lines.push(line) });
    const exchanges = Array.from({ length: 150 }, (_, i) => exchange(i));
    for (const e of exchanges) recorder.finish!(e);
    await recorder.flush();
    assert.equal(lines.filter((line) => line.event === "usage_flush_deferred").length, 1);
    await recorder.close();
    const entries = exchanges.map((e) => toLogEntry(e)!);
    for (const filter of FILTERS) {
      const got = (await requestLog(kv, filter)).map((e) => e.request_id);
      assert.deepEqual(got, expected(entries, filter), JSON.stringify(filter));
    }
    let named = 0;
    for await (const { value } of kv.list<LogRef[]>({ prefix: ["request_log_by", "token"] })) named += value.length;
    assert.equal(named, 150);
  });
}

Deno.test("usageTotals() with perDay keeps each day's totals apart, days in order and largest first", async () => {
  using kv = await Deno.openKv(":memory:");
  const day = 86_400_000;
  await record(kv, [
    exchange(1, { started_at: T0, model: "small" }),
    exchange(2, { started_at: T0, model: "big", usage: { ...exchange(0).usage!, input_tokens: 50 } }),
    exchange(3, { started_at: T0 + day, model: "small" }),
    exchange(4, { started_at: T0 + day, model: "small" }),
  ]);
  const rows = await usageTotals(kv, { by: "model", since: "2026-03-04", until: "2026-03-05", perDay: true });
  assert.deepEqual(rows.map((r) => [r.day, r.key, r.requests, r.total_tokens]), [
    ["2026-03-04", "big", 1, 51],
    ["2026-03-04", "small", 1, 2],
    ["2026-03-05", "small", 2, 9],
  ]);
  const totals = await usageTotals(kv, { by: "model", since: "2026-03-04", until: "2026-03-05" });
  assert.deepEqual(totals.map((r) => [r.day, r.key, r.requests]), [[undefined, "big", 1], [undefined, "small", 3]]);
});

Deno.test("closed days are read from KV once, open days every time, and the totals stay the same", async () => {
  using kv = await Deno.openKv(":memory:");
  const day = 86_400_000;
  await record(kv, [0, 1, 2].flatMap((d) => [exchange(d * 10, { started_at: T0 + d * day }), exchange(d * 10 + 1)]));
  const counting = countingKv(kv);
  const closed = { cache: dayCache(), openSince: "2026-03-06" };
  const range = { by: "token" as const, since: "2026-03-04", until: "2026-03-06", perDay: true };
  const uncached = await usageTotals(kv, range);
  assert.deepEqual(await usageTotals(counting.kv, range, closed), uncached);
  const first = counting.listed.get("usage")!;
  counting.listed.clear();
  assert.deepEqual(await usageTotals(counting.kv, range, closed), uncached);
  // Only the open day (one request, so its few counters) is read again.
  const again = counting.listed.get("usage")!;
  assert.ok(again > 0 && again < first / 2, `${again} of ${first}`);
  // Totals over the range, and one name of it, come out of the same cached days.
  assert.deepEqual(
    await usageTotals(counting.kv, { by: "token", since: "2026-03-04", until: "2026-03-06", name: "tok_0" }, closed),
    await usageTotals(kv, { by: "token", since: "2026-03-04", until: "2026-03-06", name: "tok_0" }),
  );
});

Deno.test("openSince() keeps a day open until its last requests can no longer be written", () => {
  const midnight = Date.parse("2026-03-05T00:00:00Z");
  assert.equal(openSince(midnight + 10 * 60_000, 45 * 60_000), "2026-03-04");
  assert.equal(openSince(midnight + 46 * 60_000, 45 * 60_000), "2026-03-05");
});

Deno.test("dayCache() holds at most its rows, dropping the day used least recently", () => {
  const sums = (n: number): DaySums => new Map(Array.from({ length: n }, (_, i) => [`n${i}`, new Map()]));
  const cache = dayCache(5);
  cache.set("token", "d1", sums(2));
  cache.set("token", "d2", sums(2));
  assert.ok(cache.get("token", "d1"), "used, so d2 is now the oldest");
  cache.set("token", "d3", sums(2));
  assert.equal(cache.get("token", "d2"), undefined);
  assert.ok(cache.get("token", "d1") && cache.get("token", "d3"));
  assert.equal(cache.get("model", "d1"), undefined, "kept apart per dimension");
  cache.set("token", "huge", sums(6));
  assert.equal(cache.get("token", "huge"), undefined, "a day larger than the cache is not kept");
});

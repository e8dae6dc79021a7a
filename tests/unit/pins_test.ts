/** @module Unit tests for session pins: a local cache in front of KV, shared by the instances on one KV. */
import assert from "node:assert/strict";
import { createPinTable, type PinTable } from "../../src/relay/pins.ts";
import type { SessionAffinity } from "../../src/relay/session.ts";

/** A KV handle that counts the reads and writes made through it. */
function countingKv(kv: Deno.Kv): { kv: Deno.Kv; counts: { get: number; set: number; atomic: number } } {
  const counts = { get: 0, set: 0, atomic: 0 };
  const proxy = new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (name in counts) counts[name as keyof typeof counts]++;
        return value.apply(target, args);
      };
    },
  });
  return { kv: proxy, counts };
}

const SESSION: SessionAffinity = { token: "tok_1", model: "m", session: { kind: "session", id: "s1" }, ttlMs: 300_000 };

/** One KV with a counter of its reads and writes, a clock, and pin tables over them (one per instance). */
interface Fixture extends Disposable {
  kv: Deno.Kv;
  counts: { get: number; set: number; atomic: number };
  clock: { at: number };
  table(): PinTable;
}

async function setup(options: { maxEntries?: number } = {}): Promise<Fixture> {
  const raw = await Deno.openKv(":memory:");
  const { kv, counts } = countingKv(raw);
  const clock = { at: Date.parse("2026-03-01T10:00:00Z") };
  const table = () => createPinTable(kv, { now: () => clock.at, syncMs: 10_000, log: () => {}, ...options });
  return { kv: raw, counts, clock, table, [Symbol.dispose]: () => raw.close() };
}

Deno.test("createPinTable() serves a pin it knows with no KV read, and writes only a new one", async () => {
  using fixture = await setup();
  const { counts, table } = fixture;
  const pins = table();
  assert.equal(await pins.find(SESSION), undefined);
  assert.equal(counts.get, 1, "an unknown session is looked up in KV once");
  assert.equal(pins.served(SESSION, "a"), "made");
  await pins.settled();
  assert.equal(counts.set, 1);
  for (let i = 0; i < 20; i++) {
    assert.equal(await pins.find(SESSION), "a");
    assert.equal(pins.served(SESSION, "a"), "kept");
  }
  await pins.settled();
  assert.deepEqual(counts, { get: 1, set: 1, atomic: 0 }, "nothing more reached KV");
  assert.equal(pins.served(SESSION, "b"), "moved");
  await pins.settled();
  assert.equal(counts.set, 2, "a move is written");
});

Deno.test("createPinTable() reads a pin made by another instance once, then knows it", async () => {
  using fixture = await setup();
  const { counts, table } = fixture;
  const first = table();
  first.served(SESSION, "a");
  await first.settled();
  const second = table();
  for (let i = 0; i < 5; i++) assert.equal(await second.find(SESSION), "a");
  assert.equal(counts.get, 1);
});

Deno.test("createPinTable() lets a pin end with its life after the last use", async () => {
  using fixture = await setup();
  const { clock, table } = fixture;
  const pins = table();
  pins.served(SESSION, "a");
  clock.at += 200_000;
  pins.served(SESSION, "a");
  clock.at += 299_999;
  assert.equal(await pins.find(SESSION), "a", "each use restarts the life");
  clock.at += 2;
  assert.equal(await pins.find(SESSION), undefined);
  await pins.settled();
  assert.equal(await table().find(SESSION), undefined, "KV's copy has ended too");
});

Deno.test("createPinTable() checks a pin in use against KV every sync interval, and adopts a move made elsewhere", async () => {
  using fixture = await setup();
  const { kv, counts, clock, table } = fixture;
  const first = table();
  first.served(SESSION, "a");
  await first.settled();
  const second = table();
  assert.equal(await second.find(SESSION), "a");
  assert.equal(second.served(SESSION, "b", "a"), "moved");
  await second.settled();
  const reads = counts.get;
  clock.at += 9_999;
  assert.equal(await first.find(SESSION), "a", "within the interval the instance trusts what it knows");
  assert.equal(counts.get, reads);
  clock.at += 1;
  assert.equal(await first.find(SESSION), "a", "the check runs in the background");
  // Served where it pointed while the check learnt of the move: the move stands.
  assert.equal(first.served(SESSION, "a", "a"), "kept");
  await first.settled();
  assert.equal(counts.get, reads + 1);
  assert.equal(await first.find(SESSION), "b");
  assert.equal(
    (await kv.get<{ upstream: string }>(["affinity", "tok_1", "m", "session", "s1"])).value?.upstream,
    "b",
  );
});

Deno.test("createPinTable() renews KV's copy once it lags half a life behind the pin's use", async () => {
  using fixture = await setup();
  const { kv, counts, clock, table } = fixture;
  const pins = table();
  const made = clock.at;
  pins.served(SESSION, "a");
  clock.at += 100_000;
  pins.served(SESSION, "a");
  await pins.settled();
  assert.equal(counts.atomic, 0, "a copy that lags by a third of a life is left alone");
  clock.at += 100_001;
  pins.served(SESSION, "a");
  await pins.settled();
  assert.equal(counts.atomic, 1);
  const stored = await kv.get<{ until: number }>(["affinity", "tok_1", "m", "session", "s1"]);
  assert.equal(stored.value?.until, made + 200_001 + 300_000);
});

Deno.test("createPinTable() keeps each token's pins apart, and a Responses answer's pin under its id", async () => {
  using fixture = await setup();
  const { table } = fixture;
  const pins = table();
  pins.served({ ...SESSION, responseId: "resp_1" }, "a");
  assert.equal(await pins.find({ ...SESSION, token: "tok_2" }), undefined);
  assert.equal(await pins.find({ ...SESSION, session: { kind: "response", id: "resp_1" } }), "a");
  assert.equal(pins.served({ ...SESSION, session: undefined, responseId: "resp_2" }, "b"), undefined);
  assert.equal(await pins.find({ ...SESSION, session: { kind: "response", id: "resp_2" } }), "b");
});

Deno.test("createPinTable() past its size forgets the least recently used pins, and reads them back from KV", async () => {
  using fixture = await setup({ maxEntries: 4 });
  const { counts, table } = fixture;
  const pins = table();
  const session = (i: number): SessionAffinity => ({ ...SESSION, session: { kind: "session", id: `s${i}` } });
  for (let i = 0; i < 6; i++) pins.served(session(i), `up${i}`);
  await pins.settled();
  const reads = counts.get;
  assert.equal(await pins.find(session(5)), "up5");
  assert.equal(counts.get, reads, "a recent pin is still known");
  assert.equal(await pins.find(session(0)), "up0");
  assert.equal(counts.get, reads + 1, "a forgotten pin costs one read");
});

Deno.test("createPinTable() answers without a pin when KV fails, and logs it", async () => {
  const kv = await Deno.openKv(":memory:");
  kv.close();
  const lines: Record<string, unknown>[] = [];
  const pins = createPinTable(kv, { now: () => 0, syncMs: 10_000, log: (line) => lines.push(line) });
  assert.equal(await pins.find(SESSION), undefined);
  assert.equal(pins.served(SESSION, "a"), "made");
  await pins.settled();
  assert.deepEqual(lines.map((line) => line.event), ["affinity_kv_failed", "affinity_kv_failed"]);
});

/** @module commitAll(): a batch in commits within KV's limits, and what a commit that gives up leaves to write. */
import assert from "node:assert/strict";
import { createKvWriter } from "../../src/core/kv_write.ts";
import { commitAll, type KvMutation } from "../../src/usage/commits.ts";
import { flakyKv } from "../_flaky_kv.ts";

Deno.test("commitAll() fills commits up to the mutation limit, keeps an item's mutations together, hands back the rest", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const flaky = flakyKv(kv);
    const writes = createKvWriter({ log: () => {}, sleep: () => Promise.resolve(), busyTries: 1 });
    let commits = 0;
    const atomic = kv.atomic.bind(kv);
    kv.atomic = () => (commits++, atomic());
    // 300 items of three mutations each: 33 fit in a commit of at most 100 (a commit holds the event loop while it
    // writes, so commits stay small).
    const items = Array.from({ length: 300 }, (_, i) => i);
    const mutations = (i: number) => [0, 1, 2].map((n) => ({ set: ["item", i, n], value: i }));
    assert.deepEqual(await commitAll(kv, items, { writes, operation: "test", mutations }), []);
    assert.equal(commits, 10);
    assert.equal((await kv.get(["item", 299, 2])).value, 299);
    flaky.busy = true;
    const rest = await commitAll(kv, [1000, 1001], { writes, operation: "test", mutations });
    assert.deepEqual(rest, [1000, 1001]);
  } finally {
    kv.close();
  }
});

Deno.test("commitAll() drops an item whose content KV refuses and writes the rest of its commit", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const writes = createKvWriter({ log: () => {}, sleep: () => Promise.resolve(), busyTries: 1 });
    // A sum past 64 bits and a key past KV's 2 KB are refused whatever is tried; the other items are fine.
    const items = [1n, 2n ** 64n, 3n, -1n];
    const mutations = (value: bigint): KvMutation[] =>
      value < 0n ? [{ set: ["x".repeat(3000)], value: 1 }] : [{ sum: ["sum", String(value)], value }];
    assert.deepEqual(await commitAll(kv, items, { writes, operation: "test", mutations }), items);
    const dropped: bigint[] = [];
    const rest = await commitAll(kv, items, { writes, operation: "test", mutations, dropped: (v) => dropped.push(v) });
    assert.deepEqual([rest, dropped], [[], [2n ** 64n, -1n]]);
    assert.deepEqual((await kv.get<Deno.KvU64>(["sum", "3"])).value?.value, 3n);
  } finally {
    kv.close();
  }
});

Deno.test("commitAll() hands back, never drops, a batch the store refuses for a full or failing disk", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const flaky = flakyKv(kv);
    const writes = createKvWriter({ log: () => {}, sleep: () => Promise.resolve(), busyTries: 1 });
    const mutations = (i: number): KvMutation[] => [{ set: ["item", i], value: i }];
    for (const fault of ["database or disk is full", "disk I/O error"]) {
      flaky.failing = fault;
      const dropped: number[] = [];
      const rest = await commitAll(kv, [1, 2, 3], {
        writes,
        operation: "test",
        mutations,
        dropped: (i) => dropped.push(i),
      });
      assert.deepEqual([rest, dropped], [[1, 2, 3], []], fault);
    }
    flaky.failing = undefined;
    assert.deepEqual(await commitAll(kv, [1, 2, 3], { writes, operation: "test", mutations }), []);
    assert.equal((await kv.get(["item", 3])).value, 3);
  } finally {
    kv.close();
  }
});

/** @module When each model was first served, in KV: recorded once, kept across restarts, agreed on by racing instances. */
import assert from "node:assert/strict";
import { firstServedKey, recordFirstServed } from "../../src/access/model_dates.ts";

const IDS = Array.from({ length: 23 }, (_, i) => `m${i}`);

Deno.test("recordFirstServed() records each new model once and keeps the first time after that", async () => {
  using kv = await Deno.openKv(":memory:");
  const march = new Date("2026-03-01T00:00:00Z");
  const first = await recordFirstServed(kv, IDS.slice(0, 12), march);
  assert.deepEqual([...first.values()], IDS.slice(0, 12).map(() => march.toISOString()));
  const april = new Date("2026-04-01T00:00:00Z");
  const later = await recordFirstServed(kv, IDS, april);
  assert.equal(later.get("m0"), march.toISOString(), "an old model keeps its date");
  assert.equal(later.get("m22"), april.toISOString(), "a new model gets the time it was first served");
  assert.equal((await kv.get(firstServedKey("m22"))).value, april.toISOString());
});

Deno.test("recordFirstServed() gives two instances starting together the same dates", async () => {
  using kv = await Deno.openKv(":memory:");
  const [one, two] = await Promise.all([
    recordFirstServed(kv, IDS, new Date("2026-03-01T00:00:00Z")),
    recordFirstServed(kv, IDS, new Date("2026-03-01T00:00:05Z")),
  ]);
  assert.deepEqual(one, two);
  for (const id of IDS) assert.equal((await kv.get(firstServedKey(id))).value, one.get(id));
});

/** @module Unit tests for the per-upstream circuit breaker. */
import assert from "node:assert/strict";
import { createHealthBoard } from "../../src/upstream/health.ts";

function board(threshold = 2) {
  let clock = 1_000_000;
  const health = createHealthBoard(
    { failure_threshold: threshold, cooldown_ms: 100, max_cooldown_ms: 350 },
    () => clock,
  );
  return { health, advance: (ms: number) => void (clock += ms) };
}

Deno.test("createHealthBoard() lets an upstream through until it fails threshold times in a row", () => {
  const { health } = board(2);
  health.failure("a");
  assert.equal(health.tryAcquire("a"), true);
  health.failure("a");
  assert.equal(health.tryAcquire("a"), false);
  assert.equal(health.snapshot(["a"]).a.state, "cooling_down");
  assert.equal(health.snapshot(["a"]).a.recent_failures, 2);
});

Deno.test("createHealthBoard() resets the count on success", () => {
  const { health } = board(2);
  health.failure("a");
  health.success("a");
  health.failure("a");
  assert.equal(health.tryAcquire("a"), true);
});

Deno.test("createHealthBoard() admits one probe after the cooldown and closes on its success", () => {
  const { health, advance } = board(1);
  health.failure("a");
  advance(99);
  assert.equal(health.tryAcquire("a"), false);
  advance(1);
  assert.equal(health.tryAcquire("a"), true);
  assert.equal(health.tryAcquire("a"), false, "a second request waits while the probe is out");
  assert.equal(health.snapshot(["a"]).a.state, "probing");
  health.success("a");
  assert.equal(health.tryAcquire("a"), true);
  assert.equal(health.snapshot(["a"]).a.state, "ok");
});

Deno.test("createHealthBoard() doubles the cooldown when the probe fails, up to the cap", () => {
  const { health, advance } = board(1);
  const waits: number[] = [];
  health.failure("a");
  for (let trip = 0; trip < 4; trip++) {
    waits.push(health.waitMs(["a"]));
    advance(waits.at(-1)!);
    assert.equal(health.tryAcquire("a"), true);
    health.failure("a");
  }
  assert.deepEqual(waits, [100, 200, 350, 350]);
});

Deno.test("createHealthBoard() keeps an upstream's retry-after even below the threshold", () => {
  const { health, advance } = board(5);
  health.failure("a", 40);
  assert.equal(health.tryAcquire("a"), false);
  assert.equal(health.waitMs(["a", "b"]), 0, "b is available now");
  assert.equal(health.waitMs(["a"]), 40);
  advance(40);
  assert.equal(health.tryAcquire("a"), true);
});

Deno.test("createHealthBoard() snapshots show no secrets, only state, time and count", () => {
  const { health } = board(1);
  health.failure("a");
  const snap = health.snapshot(["a", "b"]);
  assert.deepEqual(Object.keys(snap.a).sort(), ["cooling_until", "recent_failures", "state"]);
  assert.match(snap.a.cooling_until!, /^\d{4}-\d\d-\d\dT/);
  assert.deepEqual(snap.b, { state: "ok", cooling_until: null, recent_failures: 0 });
});

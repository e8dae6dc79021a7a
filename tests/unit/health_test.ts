/** @module Unit tests for health per deployment: the breakers of deployments and upstreams, pauses and probes. */
import assert from "node:assert/strict";
import { createHealthBoard, type Deployment, type HealthEvent } from "../../src/relay/health.ts";

const A: Deployment = { upstream: "u", model: "a" };
const B: Deployment = { upstream: "u", model: "b" };
const OTHER: Deployment = { upstream: "v", model: "a" };
const LAYOUT = new Map([["u", ["a", "b"]], ["v", ["a"]]]);

function board(threshold = 2) {
  let clock = 1_000_000;
  const health = createHealthBoard(
    { failure_threshold: threshold, cooldown_ms: 100, max_cooldown_ms: 350 },
    () => clock,
  );
  /** One whole request to `deployment` through its own view, as the relay makes it. */
  const request = (deployment: Deployment, ...events: HealthEvent[]) => {
    const view = health.forRequest();
    const admission = view.admit(deployment) ?? view.force(deployment);
    for (const event of events) view.record(admission, event);
  };
  const state = (deployment: Deployment) => health.snapshot(LAYOUT)[deployment.upstream].models[deployment.model];
  return { health, request, state, advance: (ms: number) => void (clock += ms), now: () => clock };
}

Deno.test("createHealthBoard() cools a deployment after threshold failing requests, and only that deployment", () => {
  const { health, request, state } = board(2);
  request(A, "model_failed");
  assert.ok(health.admit(A), "one failing request does not trip it");
  request(A, "model_failed");
  assert.equal(health.admit(A), undefined);
  assert.equal(state(A).state, "cooling_down");
  assert.equal(state(A).recent_failures, 2);
  assert.ok(health.admit(B), "another model on the same upstream is untouched");
  assert.equal(health.snapshot(LAYOUT).u.state, "ok", "the upstream as a whole is untouched");
});

Deno.test("createHealthBoard() counts one failure per deployment per request however often it was retried", () => {
  const { health, state } = board(2);
  const view = health.forRequest();
  for (let i = 0; i < 3; i++) view.record(view.admit(A)!, "model_failed");
  for (let i = 0; i < 3; i++) view.record(view.admit(OTHER)!, "upstream_failed");
  assert.equal(state(A).recent_failures, 1);
  assert.ok(health.admit(A));
  assert.equal(health.snapshot(LAYOUT).v.recent_failures, 1);
  assert.ok(health.admit(OTHER));
});

Deno.test("createHealthBoard() counts upstream-wide failures for every deployment of that upstream", () => {
  const { health, request } = board(2);
  request(A, "upstream_failed");
  request(B, "upstream_failed");
  assert.equal(health.admit(A), undefined);
  assert.equal(health.admit(B), undefined);
  assert.equal(health.snapshot(LAYOUT).u.state, "cooling_down");
  assert.equal(health.snapshot(LAYOUT).u.models.a.state, "ok", "the deployment's own breaker is untouched");
  assert.ok(health.admit(OTHER), "another upstream is untouched");
});

Deno.test("createHealthBoard() takes any answer from an upstream as proof that it is reachable", () => {
  const { health, request } = board(2);
  request(A, "upstream_failed");
  request(B, "model_failed");
  request(A, "upstream_failed");
  assert.ok(health.admit(B), "the failures in a row were broken by an answer");
  assert.equal(health.snapshot(LAYOUT).u.recent_failures, 1);
});

Deno.test("createHealthBoard() resets a deployment's count on success", () => {
  const { health, request } = board(2);
  request(A, "model_failed");
  request(A, "ok");
  request(A, "model_failed");
  assert.ok(health.admit(A));
});

Deno.test("createHealthBoard() never counts what the client caused or a request that told nothing", () => {
  const { health, request, state } = board(1);
  request(A, "answered");
  request(A, "neutral");
  assert.equal(state(A).recent_failures, 0);
  assert.ok(health.admit(A));
});

Deno.test("createHealthBoard() admits one probe after the cooldown and closes on its success", () => {
  const { health, request, state, advance } = board(1);
  request(A, "model_failed");
  advance(99);
  assert.equal(health.admit(A), undefined);
  advance(1);
  const probe = health.admit(A)!;
  assert.equal(probe.probesDeployment, true);
  assert.equal(health.admit(A), undefined, "a second request waits while the probe is out");
  assert.equal(state(A).state, "probing");
  health.record(probe, "ok");
  assert.equal(health.admit(A)?.probesDeployment, false);
  assert.equal(state(A).state, "ok");
});

Deno.test("createHealthBoard() frees the probe slot of a probe that told nothing", () => {
  const { health, request, advance } = board(1);
  request(A, "model_failed");
  advance(100);
  health.record(health.admit(A)!, "neutral");
  assert.equal(health.admit(A)?.probesDeployment, true);
});

Deno.test("createHealthBoard() doubles the cooldown when the probe fails, up to the cap", () => {
  const { health, request, advance, now } = board(1);
  const waits: number[] = [];
  request(A, "model_failed");
  for (let trip = 0; trip < 4; trip++) {
    waits.push(health.standing(A).readyAt - now());
    advance(waits.at(-1)!);
    health.record(health.admit(A)!, "model_failed");
  }
  assert.deepEqual(waits, [100, 200, 350, 350]);
});

Deno.test("createHealthBoard() lets a request sent with no better way count without prolonging the cooldown", () => {
  const { request, state, advance } = board(1);
  request(A, "model_failed");
  const until = state(A).cooling_until;
  advance(50);
  request(A, "model_failed");
  assert.equal(state(A).cooling_until, until);
  assert.equal(state(A).recent_failures, 2);
  request(A, "ok");
  assert.equal(state(A).state, "ok", "a forced request that succeeds closes the breaker");
});

Deno.test("createHealthBoard() lifts the cooldown when a stream starts and counts its failure at the end", () => {
  const { health, request, advance } = board(2);
  request(A, "model_failed");
  request(A, "model_failed");
  advance(100);
  const view = health.forRequest();
  const probe = view.admit(A)!;
  view.record(probe, "started");
  assert.ok(health.admit(A), "others may use it while the stream runs");
  view.record(probe, "model_failed");
  assert.equal(health.admit(A), undefined, "the stream's failure is the third in a row");
});

Deno.test("createHealthBoard() keeps a retry-after pause apart from the breaker", () => {
  const { health, state, advance, now } = board(5);
  health.pause(A, 40);
  assert.equal(health.admit(A), undefined);
  assert.deepEqual(health.standing(A), { readyAt: now() + 40, pausedOnly: true, lastFailureAt: 0 });
  assert.equal(state(A).state, "paused");
  assert.equal(state(A).recent_failures, 0);
  assert.ok(health.admit(B));
  advance(40);
  assert.equal(health.admit(A)?.probesDeployment, false, "the first request after a pause is no probe");
});

Deno.test("createHealthBoard() standing says when a skipped deployment is ready and when it last failed", () => {
  const { health, request, advance, now } = board(1);
  request(A, "model_failed");
  advance(10);
  request(B, "model_failed");
  assert.deepEqual(health.standing(A), { readyAt: now() + 90, pausedOnly: false, lastFailureAt: now() - 10 });
  assert.deepEqual(health.standing(B), { readyAt: now() + 100, pausedOnly: false, lastFailureAt: now() });
  assert.equal(health.standing(OTHER).readyAt, now());
});

Deno.test("createHealthBoard() snapshots show upstreams with their deployments, and no secrets", () => {
  const { health, request, state } = board(1);
  request(A, "model_failed");
  const snap = health.snapshot(LAYOUT);
  assert.deepEqual(Object.keys(snap), ["u", "v"]);
  assert.deepEqual(Object.keys(snap.u).sort(), ["cooling_until", "credential", "models", "recent_failures", "state"]);
  assert.deepEqual(Object.keys(snap.u.models), ["a", "b"]);
  assert.match(state(A).cooling_until!, /^\d{4}-\d\d-\d\dT/);
  assert.deepEqual(snap.u.models.b, { state: "ok", cooling_until: null, recent_failures: 0 });
  assert.deepEqual(snap.v.models.a, { state: "ok", cooling_until: null, recent_failures: 0 });
});

Deno.test("createHealthBoard() shows what each upstream made of the gateway's credential at its last use", () => {
  const { health } = board(3);
  const credentials = () => Object.values(health.snapshot(LAYOUT)).map((upstream) => upstream.credential);
  assert.deepEqual(credentials(), ["untried", "untried"]);
  health.forRequest("t").credential("u", "refused");
  health.credential("v", "unavailable");
  assert.deepEqual(credentials(), ["refused", "unavailable"]);
  health.credential("u", "accepted");
  assert.deepEqual(credentials(), ["accepted", "unavailable"]);
});

Deno.test("createHealthBoard() counts a caller's failures once while the deployment serves others well", () => {
  const { health, request, state, advance } = board(2);
  const fail = (caller: string) => {
    const view = health.forRequest(caller);
    view.record(view.admit(A) ?? view.force(A), "model_failed");
  };
  request(A, "ok");
  for (let i = 0; i < 4; i++) fail("tok_poison");
  assert.deepEqual([state(A).state, state(A).recent_failures], ["ok", 4], "one caller's repeats are no strikes");
  request(A, "ok");
  fail("tok_poison");
  fail("tok_other");
  assert.equal(state(A).state, "cooling_down", "two callers failing are two strikes");
  request(A, "ok");
  fail("tok_poison");
  advance(100);
  fail("tok_poison");
  assert.equal(state(A).state, "cooling_down", "nothing served well for a cooldown: the repeat is a strike");
});

/** @module Unit tests for choosing the deployment of a request's next attempt. */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";
import type { AttemptResult } from "../../src/relay/outcome.ts";
import { createHealthBoard } from "../../src/relay/health.ts";
import { deploymentOf, pickNext } from "../../src/relay/pick.ts";
import { createRetryBudget } from "../../src/relay/retry_budget.ts";
import type { ModelRoute } from "../../src/relay/routing.ts";
import { routeTableFor } from "../_helpers.ts";

const CONFIG = parseConfig(
  `
upstreams:
  - { name: x, protocol: anthropic, base_url: "http://127.0.0.1:1/v1", api_key_env: K, models: [m] }
  - { name: y, protocol: anthropic, base_url: "http://127.0.0.1:2/v1", api_key_env: K, models: [m] }
groups:
  - { name: g, listing: anthropic, models: [m] }
`,
  "unit.yaml",
);
const [X, Y] = routeTableFor(CONFIG, () => "key").routes.get("m")!;

function setup(budget = { ratio: 0.2, min_retries: 3 }) {
  let clock = 2_000_000;
  const now = () => clock;
  const health = createHealthBoard({ failure_threshold: 1, cooldown_ms: 1000, max_cooldown_ms: 8000 }, now);
  const retries = createRetryBudget({ ...budget, window_ms: 10_000 }, now);
  const pick = (routes: ModelRoute[], tried: [ModelRoute, AttemptResult][] = [], remainingMs = 5000, mayWait = true) =>
    pickNext(routes, new Map(tried), { health, budget: retries, now: clock, remainingMs, mayWait });
  /** Trips a deployment's breaker with one failing request. */
  const cool = (route: ModelRoute) => health.record(health.force(deploymentOf(route)), "model_failed");
  return { health, pick, cool, advance: (ms: number) => void (clock += ms) };
}

function result(extra: Partial<AttemptResult> = {}): AttemptResult {
  return { upstream: "x", outcome: "upstream", status: 500, retryable: true, fail: () => new Response(), ...extra };
}

Deno.test("pickNext() prefers a deployment not yet tried to a retry of one that was", () => {
  const { pick } = setup();
  const next = pick([X, Y], [[X, result()]]);
  assert.equal(next?.route, Y);
  assert.ok(next.admission);
});

Deno.test("pickNext() skips a cooling deployment while another is ready", () => {
  const { pick, cool } = setup();
  cool(X);
  assert.equal(pick([X, Y])?.route, Y);
});

Deno.test("pickNext() sends a first attempt to the deployment ready first when every one is cooling", () => {
  const { pick, cool, advance } = setup();
  cool(Y);
  advance(10);
  cool(X);
  const next = pick([X, Y]);
  assert.equal(next?.route, Y);
  assert.equal(next.admission, undefined, "it is sent without a pass, as no probe");
  assert.equal(next.waitMs, 0, "a cooldown is not waited out");
  assert.equal(pick([X])?.route, X, "a single deployment is never refused by its own breaker");
});

Deno.test("pickNext() breaks a tie by the deployment that failed least recently", () => {
  const { health, pick, cool, advance } = setup();
  cool(X);
  advance(10);
  cool(Y);
  advance(2000);
  // Both cooldowns are over and both probes are out: both may be ready any moment.
  health.admit(deploymentOf(X));
  health.admit(deploymentOf(Y));
  assert.equal(pick([Y, X])?.route, X);
});

Deno.test("pickNext() does not send a later attempt to a cooling deployment: the request has an answer", () => {
  const { pick, cool } = setup({ ratio: 0, min_retries: 0 });
  cool(X);
  assert.equal(pick([X, Y], [[Y, result()]]), undefined);
});

Deno.test("pickNext() waits out a retry-after pause the request can afford, and otherwise does not", () => {
  const { health, pick, cool } = setup();
  const limited = result({ status: 429, retrySame: false, retryAfterMs: 1000 });
  health.pause(deploymentOf(X), 1000);
  cool(Y);
  const next = pick([X, Y], [[X, limited]]);
  assert.equal(next?.route, X);
  assert.equal(next.waitMs, 1000);
  assert.equal(pick([X, Y], [[X, limited]], 900), undefined, "a later attempt passes the upstream's answer on");
  assert.equal(pick([X, Y], [[X, limited]], 5000, false), undefined, "a request waits out one pause at most");
  const first = pick([X, Y], [], 900);
  assert.deepEqual([first?.route, first?.waitMs], [X, 0], "a first attempt goes at once, for the upstream's answer");
});

Deno.test("pickNext() does not ask a deployment again after a 429 or 529 without retry-after", () => {
  const { pick } = setup();
  assert.equal(pick([X], [[X, result({ status: 529, retrySame: false })]]), undefined);
  assert.equal(pick([X], [[X, result({ status: 400, retryable: false })]]), undefined);
});

Deno.test("pickNext() retries the same deployment only within the retry budget, but fails over freely", () => {
  const { pick } = setup({ ratio: 0, min_retries: 1 });
  assert.equal(pick([X], [[X, result()]])?.route, X);
  assert.equal(pick([X], [[X, result()]]), undefined, "the one retry of the window is spent");
  assert.equal(pick([X, Y], [[X, result()]])?.route, Y);
});

/** @module Unit tests for the retry budget per deployment. */
import assert from "node:assert/strict";
import { createRetryBudget } from "../../src/relay/retry_budget.ts";

function budget(ratio: number, minRetries: number) {
  let clock = 5_000_000;
  const retries = createRetryBudget({ ratio, min_retries: minRetries, window_ms: 10_000 }, () => clock);
  /** Spends retries of `key` while the budget allows, up to 100; returns how many it allowed. */
  const drain = (key: string) => {
    let n = 0;
    while (n < 100 && retries.canRetry(key)) {
      retries.withdraw(key);
      n++;
    }
    return n;
  };
  return { retries, drain, advance: (ms: number) => void (clock += ms) };
}

Deno.test("createRetryBudget() allows min_retries with no requests, then refuses", () => {
  const { drain } = budget(0.2, 3);
  assert.equal(drain("a"), 3);
});

Deno.test("createRetryBudget() adds ratio retries per request, per key", () => {
  const { retries, drain } = budget(0.2, 1);
  for (let i = 0; i < 20; i++) retries.deposit("a");
  assert.equal(drain("a"), 5, "1 + 0.2 x 20");
  assert.equal(drain("b"), 1, "another deployment has its own budget");
});

Deno.test("createRetryBudget() forgets requests and retries once they leave the window", () => {
  const { retries, drain, advance } = budget(0.5, 0);
  for (let i = 0; i < 10; i++) retries.deposit("a");
  assert.equal(drain("a"), 5);
  advance(5_000);
  assert.equal(drain("a"), 0, "half the window later both counts still stand");
  advance(5_000);
  assert.equal(drain("a"), 0, "a full window later the requests are gone too");
  retries.deposit("a");
  retries.deposit("a");
  assert.equal(drain("a"), 1);
});

Deno.test("createRetryBudget() with ratio 0 and min_retries 0 never retries", () => {
  const { retries, drain } = budget(0, 0);
  retries.deposit("a");
  assert.equal(drain("a"), 0);
});

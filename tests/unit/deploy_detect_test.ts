/** @module Deno Deploy as the gateway tells it apart (docs/operating.md, "Deno Deploy"), and the stop that fits there. */
import assert from "node:assert/strict";
import { onDeploy } from "../../src/serve/runtime.ts";
import { stopTimes } from "../../src/serve/server.ts";

const DETECTED: [Record<string, string>, boolean][] = [
  [{ DENO_DEPLOY: "1" }, true], // the platform's own word, in every context
  [{ DENO_DEPLOYMENT_ID: "abc123" }, true], // also set by Deploy Classic
  [{ DENO_DEPLOY: "1", DENO_DEPLOYMENT_ID: "abc123", DENO_DEPLOY_APP_SLUG: "gw" }, true],
  [{ DENO_DEPLOY: "0" }, false],
  [{}, false],
];

for (const [env, want] of DETECTED) {
  Deno.test(`onDeploy() with ${JSON.stringify(env)} is ${want}`, () => {
    assert.equal(onDeploy((name) => env[name]), want);
  });
}

Deno.test("stopTimes(): on Deploy the grace and the cut take at most 3 of the 5 s before SIGKILL; elsewhere the config's", () => {
  assert.deepEqual(stopTimes(30_000, true), { graceMs: 2000, cutMs: 500 });
  assert.deepEqual(stopTimes(800, true), { graceMs: 800, cutMs: 500 });
  assert.deepEqual(stopTimes(30_000, false), { graceMs: 30_000, cutMs: 1000 });
  const { graceMs, cutMs } = stopTimes(Number.MAX_SAFE_INTEGER, true);
  assert.ok(graceMs + 2 * cutMs <= 3000);
});

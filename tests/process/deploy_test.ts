/**
 * @module The entry point as Deno Deploy runs it: no arguments, DENO_DEPLOY=1 set, the config from
 * MODELGATE_CONFIG_YAML, and no file system permission at all, so any read or write of a local file would fail.
 */
import assert from "node:assert/strict";
import { processConfigYaml, startProcess } from "../_process.ts";

Deno.test("main.ts serves with no arguments, config from MODELGATE_CONFIG_YAML and no file access", async () => {
  await using gateway = await startProcess({
    command: [Deno.execPath(), "run", "--allow-net=127.0.0.1", "--allow-env", "--deny-read", "--deny-write", "main.ts"],
    env: {
      DENO_DEPLOY: "1",
      MODELGATE_CONFIG_YAML: processConfigYaml(),
      // Locally the managed KV stands in as memory; on Deploy this variable is simply not set.
      MODELGATE_KV: ":memory:",
      TEST_UP_KEY: "upstream-key-on-deploy",
      MODELGATE_ADMIN_KEY: "deploy-admin-key-0123456789-abcdefgh",
    },
  });
  assert.ok(gateway.stderr.some((line) => line.includes("(config $MODELGATE_CONFIG_YAML)")), gateway.stderr.join("\n"));
  const health = await fetch(`${gateway.url}/healthz`);
  assert.equal(health.status, 200);
  assert.equal((await health.json()).upstreams.up.has_key, true);
  const ready = await fetch(`${gateway.url}/readyz`);
  assert.equal(ready.status, 200);
  await ready.body?.cancel();
  // The console's assets travel in the module graph, so they are served with no file access at all.
  const script = await fetch(`${gateway.url}/ui/assets/console.js`);
  assert.equal(script.status, 200);
  assert.match(await script.text(), /DOMContentLoaded/);
  const refused = await fetch(`${gateway.url}/v1/models`);
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
  assert.equal(await gateway.stop(), 0);
  const lines = gateway.stdout.map((text) => JSON.parse(text));
  assert.deepEqual(lines.map((line) => [line.event, line.route, line.status]), [
    ["request", "/ui/*", 200],
    ["request", "/v1/models", 401],
  ]);
});

/**
 * @module Two gateway processes on one KV file send each session to the deployment that served it, whichever of them
 * served the turn before: session pins live in the shared KV.
 */
import assert from "node:assert/strict";
import { UPSTREAM_KEYS } from "../_helpers.ts";
import { cachingDeployments, conversation, POOL, turn } from "../_prompt_cache.ts";
import { cliToken, denoMain, startProcess } from "../_process.ts";

Deno.test("two gateway processes on one KV file route each session to the same deployment", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-affinity-" });
  await using deployments = cachingDeployments(POOL);
  const kvPath = `${dir}/shared.kv`;
  try {
    const configFile = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(
      configFile,
      `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(kvPath)}
upstreams:
${
        POOL.map((name) =>
          `  - { name: ${name}, protocol: anthropic, base_url: "${deployments.url}/${name}/v1", ` +
          `api_key_env: TEST_ANTHROPIC_KEY, models: [claude-pool] }`
        ).join("\n")
      }
groups:
  - { name: default, listing: anthropic, models: [claude-pool] }
`,
    );
    const env = { TEST_ANTHROPIC_KEY: UPSTREAM_KEYS.TEST_ANTHROPIC_KEY };
    await using first = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    await using second = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    const { token, tokenId } = await cliToken(dir, configFile, env);

    // Each process picks at random by weight: without shared pins, each second turn would land elsewhere half the time.
    const convs = Array.from({ length: 12 }, (_, i) => conversation(`p${i}`));
    const header = (label: string) => ({ headers: { "x-claude-code-session-id": `proc-${label}` } });
    for (const conv of convs) assert.equal(await turn(first.url, token, conv, header(conv.label)), 200);
    const firstTurns = new Map(deployments.turns.map((t) => [t.session, t.deployment]));

    // The first process writes each pin as its answer starts; wait (bounded) until KV holds them all.
    const kv = await Deno.openKv(kvPath);
    try {
      const pinned = async () => {
        let count = 0;
        for await (const _ of kv.list({ prefix: ["affinity", tokenId, "claude-pool", "session"] })) count++;
        return count;
      };
      const deadline = Date.now() + 5000;
      while (await pinned() < convs.length) {
        assert.ok(Date.now() < deadline, "the pins reached KV");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      kv.close();
    }

    const mark = deployments.turns.length;
    for (const conv of convs) assert.equal(await turn(second.url, token, conv, header(conv.label)), 200);
    for (const t of deployments.turns.slice(mark)) {
      assert.equal(t.deployment, firstTurns.get(t.session), `session ${t.session} stayed on its deployment`);
    }
    assert.equal(await first.stop(), 0);
    assert.equal(await second.stop(), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

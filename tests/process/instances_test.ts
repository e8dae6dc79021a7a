/**
 * @module Several instances on one KV: two gateway processes share a KV file, a token created or revoked
 * through the CLI takes effect on both within a second, and a rate limit counts requests to both.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody } from "../_helpers.ts";
import { denoMain, processConfigYaml, runCommand, startProcess } from "../_process.ts";

/** Polls `check` until it is true; returns the milliseconds it took, or throws after `limitMs`. */
async function within(limitMs: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) throw new Error(`${what} did not happen within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return performance.now() - started;
}

async function modelsStatus(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/v1/models`, { headers: { "x-api-key": token } });
  await res.body?.cancel();
  return res.status;
}

Deno.test("two gateways on one KV file share tokens, revocations and rate limits", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-instances-" });
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage()));
  try {
    const configFile = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(
      configFile,
      processConfigYaml(`${dir}/shared.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`),
    );
    const env = { TEST_UP_KEY: "upstream-key-for-instances" };
    await using first = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    await using second = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });

    const created = await runCommand(
      denoMain(dir, "token", "create", "--group", "default", "--config", configFile),
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    const tokenId = /Created token (tok_[0-9a-f]+)/.exec(created.stderr)?.[1];
    assert.match(token, /^sk-/);
    assert.ok(tokenId);
    for (const gateway of [first, second]) {
      await within(1000, "token creation", async () => await modelsStatus(gateway.url, token) === 200);
    }

    const revoked = await runCommand(denoMain(dir, "token", "revoke", tokenId, "--config", configFile), env);
    assert.equal(revoked.code, 0, revoked.stderr);
    for (const gateway of [first, second]) {
      await within(1000, "token revocation", async () => await modelsStatus(gateway.url, token) === 401);
    }

    const limited = await runCommand(
      denoMain(dir, "token", "create", "--group", "default", "--requests-per-minute", "3", "--config", configFile),
      env,
    );
    assert.equal(limited.code, 0, limited.stderr);
    const limitedToken = limited.stdout.trim();
    // The limit counts per calendar minute; starting right at a minute's end could split the requests over two.
    const toNextMinute = 60_000 - (Date.now() % 60_000);
    if (toNextMinute < 3000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 50));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      for (const gateway of [first, second]) {
        const res = await fetch(`${gateway.url}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": limitedToken, "content-type": "application/json" },
          body: JSON.stringify(messagesBody({ model: "m1" })),
        });
        await res.body?.cancel();
        statuses.push(res.status);
      }
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429], "three requests a minute across both instances");

    assert.equal(await first.stop(), 0, "SIGTERM stops the gateway cleanly");
    assert.equal(await second.stop(), 0);
    const lines = first.stdout.map((line) => JSON.parse(line));
    assert.ok(lines.some((line) => line.event === "request" && line.route === "/v1/models" && line.status === 200));
    const output = [...first.stdout, ...second.stdout, ...first.stderr, ...second.stderr].join("\n");
    assert.ok(!output.includes(token), "the token secret reached a gateway's output");
    assert.ok(!output.includes(limitedToken), "the limited token's secret reached a gateway's output");
    assert.ok(!output.includes(env.TEST_UP_KEY), "the upstream key reached a gateway's output");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * @module `serve --workers 2` as a real process on a KV file: a request limit holds exactly across both workers under
 * a burst, a revoked token is refused by both within the token cache's poll time, each worker keeps its own health
 * board as separate instances do, and SIGTERM drains both (their usage reaches KV) before the exit.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody } from "../_helpers.ts";
import { cliToken, denoMain, processConfigYaml, runCommand } from "../_process.ts";
import {
  answeredBy,
  freshFetch,
  startWorkers,
  WORKERS,
  WORKERS_ENV,
  workersIn,
  workersWithToken,
} from "../_workers.ts";

const BURST = 50;
const LIMIT = 10;

/** The limit counts per calendar minute; a burst right at a minute's end could be split over two. */
async function notAtMinuteEnd(): Promise<void> {
  const toNextMinute = 60_000 - (Date.now() % 60_000);
  if (toNextMinute < 3000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 50));
}

function countOf(statuses: readonly number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

Deno.test("2 workers on one KV file under a 50-request burst: exactly the limit passes, usage adds up", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-limit-" });
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage()));
  try {
    const env = WORKERS_ENV;
    // Usage is flushed every 50 ms, so both workers write their batches while the other one does too.
    const { gateway, configFile, token: secret, tokenId } = await workersWithToken(dir, upstream.url, {
      extraYaml: "usage: { flush_ms: 50 }\n",
      tokenFlags: ["--requests-per-minute", String(LIMIT)],
    });
    await using _ = gateway;
    await notAtMinuteEnd();
    const statuses = await Promise.all(Array.from({ length: BURST }, async () => {
      const res = await freshFetch(`${gateway.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": secret, "content-type": "application/json" },
        body: JSON.stringify(messagesBody({ model: "m1" })),
      });
      if (res.status === 429) assert.equal(JSON.parse(res.text).error.type, "rate_limit_error");
      return res.status;
    }));
    assert.deepEqual(countOf(statuses), { 200: LIMIT, 429: BURST - LIMIT });
    assert.equal(upstream.requests.length, LIMIT);

    assert.equal(await gateway.stop(), 0, "SIGTERM stops every worker and the gateway cleanly");
    assert.deepEqual(workersIn(answeredBy(gateway, "/v1/messages")), [1, 2], "both workers answered the burst");
    const usage = await runCommand(
      denoMain(dir, "usage", "--by", "token", "--name", tokenId, "--json", "--config", configFile),
      env,
    );
    assert.equal(usage.code, 0, usage.stderr);
    const [row] = JSON.parse(usage.stdout).data;
    assert.equal(row.requests, BURST, "both workers' usage batches reached KV before the exit");
    assert.equal(row.errors, BURST - LIMIT);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Polls `check` every 10 ms until it is true; throws after `limitMs`. */
async function within(limitMs: number, what: string, check: () => Promise<boolean>): Promise<void> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) throw new Error(`${what} did not happen within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Sends `count` requests to /v1/models with `token`, each on its own connection; answers their statuses. */
async function modelsStatuses(url: string, token: string, count: number): Promise<number[]> {
  return await Promise.all(Array.from({ length: count }, async () => {
    return (await freshFetch(`${url}/v1/models`, { headers: { "x-api-key": token } })).status;
  }));
}

/**
 * Polls until every one of a round of fresh connections answers `status`; throws after `limitMs`. A round is sixteen
 * connections, so that it reaches both workers but once in 30,000 rounds (eight left one worker out once in 128, and a
 * worker still answering the old way then failed the next check).
 */
async function untilAll(url: string, token: string, status: number, limitMs: number): Promise<void> {
  const started = performance.now();
  while (!(await modelsStatuses(url, token, 16)).every((s) => s === status)) {
    if (performance.now() - started > limitMs) throw new Error(`not every worker answered ${status} in ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("2 workers: a token works on both, and once revoked both refuse it within three polls of the token cache", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-revoke-" });
  try {
    const env = { TEST_UP_KEY: "upstream-key-for-workers" };
    const yaml = processConfigYaml(`${dir}/shared.kv`) + "usage: { auth_refresh_ms: 500 }\n";
    const { gateway, configFile } = await startWorkers(dir, yaml, env);
    await using _ = gateway;
    const { token, tokenId } = await cliToken(dir, configFile, env);
    await untilAll(gateway.url, token, 200, 2000);
    const revoked = await runCommand(denoMain(dir, "token", "revoke", tokenId, "--config", configFile), env);
    assert.equal(revoked.code, 0, revoked.stderr);
    const revokedAt = performance.now();
    // Each worker's token cache polls every 500 ms, so each refuses the token within 500 ms and the time its poll takes;
    // three polls' worth leaves room for rounds of sixteen fresh connections on a busy machine.
    await untilAll(gateway.url, token, 401, 1500);
    const tookMs = performance.now() - revokedAt;
    const after = await modelsStatuses(gateway.url, token, 16);
    assert.deepEqual(countOf(after), { 401: 16 }, `every connection refused the token (after ${tookMs} ms)`);
    assert.equal(await gateway.stop(), 0);
    const lines = answeredBy(gateway, "/v1/models");
    assert.deepEqual(workersIn(lines.filter((line) => line.status === 200)), [1, 2], "both accepted it first");
    assert.deepEqual(workersIn(lines.slice(-16)), [1, 2], "both refused it at the end");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("2 workers: each keeps its own health board, so a failing deployment trips once per worker", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-health-" });
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /bad/v1/messages", () => jsonReply({ type: "error", error: { type: "api_error" } }, 500));
  upstream.routes.set("POST /good/v1/messages", () => jsonReply(anthropicMessage()));
  try {
    const env = { TEST_UP_KEY: "upstream-key-for-workers" };
    const yaml = `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(`${dir}/shared.kv`)}
routing: { failure_threshold: 3, cooldown_ms: 60000 }
upstreams:
  - { name: bad, protocol: anthropic, base_url: "${upstream.url}/bad/v1", api_key_env: TEST_UP_KEY, models: [m1],
      priority: 1 }
  - { name: good, protocol: anthropic, base_url: "${upstream.url}/good/v1", api_key_env: TEST_UP_KEY, models: [m1] }
groups:
  - { name: default, listing: anthropic, models: [m1] }
`;
    const { gateway, configFile } = await startWorkers(dir, yaml, env);
    await using _ = gateway;
    const { token } = await cliToken(dir, configFile, env);
    const statuses: number[] = [];
    // One at a time, so each worker's board sees its failures in order.
    for (let i = 0; i < 24; i++) {
      const res = await freshFetch(`${gateway.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": token, "content-type": "application/json" },
        body: JSON.stringify(messagesBody({ model: "m1" })),
      });
      statuses.push(res.status);
    }
    assert.deepEqual(countOf(statuses), { 200: 24 }, "every request failed over to the good deployment");
    assert.equal(await gateway.stop(), 0);
    const served = answeredBy(gateway, "/v1/messages");
    assert.equal(served.length, 24);
    // The documented rule, per worker: failure_threshold failures in a row cool the deployment on that worker.
    const perWorker = [...Array(WORKERS).keys()].map((i) => served.filter((line) => line.worker === i + 1).length);
    assert.ok(perWorker.every((n) => n >= 3), `each worker served enough to trip its breaker: ${perWorker}`);
    const expected = perWorker.map((n) => Math.min(3, n)).reduce((a, b) => a + b, 0);
    const bad = upstream.requests.filter((seen) => seen.path.startsWith("/bad/")).length;
    assert.equal(bad, expected, "each worker tried the failing deployment until its own breaker tripped");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("2 workers: SIGTERM lets the requests in flight on both workers finish, then the gateway exits 0", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-stop-" });
  await using upstream = fakeUpstream();
  const release = Promise.withResolvers<void>();
  upstream.routes.set("POST /up/v1/messages", async () => {
    await release.promise;
    return jsonReply(anthropicMessage());
  });
  try {
    const { gateway, token } = await workersWithToken(dir, upstream.url);
    await using _ = gateway;
    const inFlight = Array.from({ length: 12 }, () =>
      freshFetch(`${gateway.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": token, "content-type": "application/json" },
        body: JSON.stringify(messagesBody({ model: "m1" })),
      }));
    await within(5000, "every request reaching the upstream", () => Promise.resolve(upstream.requests.length === 12));
    const stopped = gateway.stop();
    // The stop has reached the workers once one says so; the answers are held until then.
    await within(5000, "the stopping line", () => Promise.resolve(gateway.stderr.some((l) => l.includes("stopping"))));
    release.resolve();
    const answers = await Promise.all(inFlight);
    assert.deepEqual(answers.map((answer) => answer.status), Array(12).fill(200));
    assert.equal(await stopped, 0);
    assert.deepEqual(workersIn(answeredBy(gateway, "/v1/messages")), [1, 2], "both workers had requests in flight");
    assert.equal(gateway.stderr.filter((line) => line.includes("modelgate stopping")).length, 1, "said once");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("2 workers: a second gateway started on the same port is refused, instead of sharing the port", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-port-" });
  try {
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = probe.addr as Deno.NetAddr;
    probe.close();
    const yaml = processConfigYaml(`${dir}/shared.kv`).replace("port: 0", `port: ${port}`);
    const { gateway } = await startWorkers(dir, yaml, WORKERS_ENV);
    await using _ = gateway;
    assert.equal(gateway.url, `http://127.0.0.1:${port}`);
    const second = await runCommand(
      denoMain(dir, "serve", "--config", `${dir}/gateway.yaml`, "--workers", "2"),
      WORKERS_ENV,
      30_000,
    );
    assert.equal(second.code, 1);
    assert.match(second.stderr, /in use/i);
    assert.doesNotMatch(second.stderr, /listening on/);
    assert.equal(await gateway.stop(), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

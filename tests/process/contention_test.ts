/**
 * @module Two gateway processes on one KV file under a burst: the limit holds to the request, every other request
 * is a 429 (never a 500 from a busy database), and the usage both flush at once adds up to every request.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody } from "../_helpers.ts";
import { denoMain, processConfigYaml, runCommand, startProcess } from "../_process.ts";

const BURST = 50;
const LIMIT = 10;

Deno.test("two gateways on one KV file under a 50-request burst: exactly the limit passes, the rest get 429", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-contention-" });
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage()));
  try {
    const configFile = `${dir}/gateway.yaml`;
    // Usage is flushed every 50 ms, so both processes write their batches while the other one does too.
    const yaml = processConfigYaml(`${dir}/shared.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`) +
      "usage: { flush_ms: 50 }\n";
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-contention" };
    const created = await runCommand(
      denoMain(
        dir,
        "token",
        "create",
        "--group",
        "default",
        "--requests-per-minute",
        String(LIMIT),
        "--json",
        "--config",
        configFile,
      ),
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const { secret, token } = JSON.parse(created.stdout);
    await using first = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    await using second = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });

    // The limit counts per calendar minute; a burst right at a minute's end could be split over two.
    const toNextMinute = 60_000 - (Date.now() % 60_000);
    if (toNextMinute < 3000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 50));
    const statuses = await Promise.all(Array.from({ length: BURST }, async (_, i) => {
      const gateway = i % 2 === 0 ? first : second;
      const res = await fetch(`${gateway.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": secret, "content-type": "application/json" },
        body: JSON.stringify(messagesBody({ model: "m1" })),
      });
      const body = await res.json();
      if (res.status === 429) assert.equal(body.error.type, "rate_limit_error");
      return res.status;
    }));
    const counts: Record<number, number> = {};
    for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
    assert.deepEqual(counts, { 200: LIMIT, 429: BURST - LIMIT });
    assert.equal(upstream.requests.length, LIMIT);

    assert.equal(await first.stop(), 0);
    assert.equal(await second.stop(), 0);
    const usage = await runCommand(
      denoMain(dir, "usage", "--by", "token", "--name", token.id, "--json", "--config", configFile),
      env,
    );
    assert.equal(usage.code, 0, usage.stderr);
    const [row] = JSON.parse(usage.stdout).data;
    assert.equal(row.requests, BURST, "every request of the burst is in the usage totals");
    assert.equal(row.errors, BURST - LIMIT);
    const log = await runCommand(
      denoMain(dir, "usage", "log", "--token", token.id, "--limit", "100", "--json", "--config", configFile),
      env,
    );
    assert.equal(JSON.parse(log.stdout).length, BURST, "every request of the burst is in the request log");
    const lines = [...first.stdout, ...second.stdout].map((line) => JSON.parse(line));
    assert.deepEqual(lines.filter((line) => line.level === "error"), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

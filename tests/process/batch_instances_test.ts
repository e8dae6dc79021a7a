/**
 * @module A gateway-run batch outlives the instance running it: two gateway processes on one KV file, the first
 * killed by its pid while it holds requests at the upstream; the second takes them over once their leases lapse
 * and finishes the batch, and the upstream saw no request run twice to completion.
 */
import assert from "node:assert/strict";
import { gatewayBatches } from "../../src/batches/gateway_run.ts";
import { idStore } from "../../src/batches/ids.ts";
import { countsOf, getRun } from "../../src/batches/run/records.ts";
import { createStore } from "../../src/access/store.ts";
import { chatCompletion, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { marker } from "../_gateway_batches.ts";
import { cliToken, denoMain, startProcess } from "../_process.ts";

const TOTAL = 20;
const CONCURRENCY = 4;
/** Requests the upstream answers before it starts holding them, so the first instance dies mid-batch. */
const ANSWERED_FIRST = 6;

/** Polls `check` until it is true, or throws after `limitMs`. */
async function until(limitMs: number, what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = performance.now() + limitMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what} did not happen within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("a gateway-run batch whose instance is killed mid-batch is finished by another, no request run twice", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-batch-instances-" });
  await using upstream = fakeUpstream();
  // Answers completed per custom id: an answer counts only once the upstream has sent it whole.
  const completed = new Map<string, number>();
  let holding = false;
  const release = Promise.withResolvers<void>();
  let answered = 0;
  upstream.routes.set("POST /oai/v1/chat/completions", async (seen) => {
    const id = marker(seen.body);
    if (answered >= ANSWERED_FIRST) holding = true;
    if (holding) {
      // Held until the gateway that sent it is gone (killed) or the test lets answers through again.
      const outcome = await Promise.race([seen.closed.then(() => "gone"), release.promise.then(() => "go")]);
      if (outcome === "gone") return jsonReply({ error: "the gateway went away" }, 599);
    }
    answered++;
    completed.set(id, (completed.get(id) ?? 0) + 1);
    return jsonReply(chatCompletion(`done ${id}`));
  });
  const configFile = `${dir}/gateway.yaml`;
  const kvPath = `${dir}/shared.kv`;
  await Deno.writeTextFile(
    configFile,
    `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(kvPath)}
batches: { concurrency: ${CONCURRENCY}, lease_ms: 1000, poll_ms: 50 }
upstreams:
  - { name: chat, protocol: openai, base_url: "${upstream.url}/oai/v1", api_key_env: TEST_UP_KEY, models: [m1] }
groups:
  - { name: default, listing: anthropic, models: [m1] }
`,
  );
  const env = { TEST_UP_KEY: "upstream-key-for-batches" };
  const { tokenId } = await cliToken(dir, configFile, env);
  const kv = await Deno.openKv(kvPath);
  try {
    const store = createStore(kv);
    const token = await store.getToken(tokenId);
    const group = await store.getGroup("default");
    assert.ok(token && group);
    // The batch is made in KV as the batch routes make it; only the gateway processes run it.
    const batches = gatewayBatches({ kv, ids: idStore(kv), now: () => new Date(), wake: () => {} });
    const made = await batches.create({
      protocol: "anthropic",
      caller: { token, group },
      requestId: "req_process",
      requests: Array.from({ length: TOTAL }, (_, i) => ({
        custom_id: `r${i}`,
        endpoint: "/v1/messages" as const,
        body: { model: "m1", max_tokens: 16, messages: [{ role: "user", content: `r${i}` }] },
      })),
    });
    const id = made.id as string;

    const first = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    try {
      // The first instance has kept the answered results and holds a full set of requests at the upstream.
      await until(15_000, "the first instance holding requests", async () => {
        const counts = await countsOf(kv, id);
        return counts.succeeded === ANSWERED_FIRST && upstream.open() === CONCURRENCY;
      });
      Deno.kill(first.pid, "SIGKILL");
      await first.stop().catch(() => {});
    } finally {
      await first.stop().catch(() => {});
    }
    await until(5000, "the killed instance's requests closing", () => upstream.open() === 0);
    release.resolve();

    await using second = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    await until(20_000, "the second instance finishing the batch", async () => {
      const got = await getRun(kv, id, Date.now());
      return got?.batch.state === "ended";
    });
    const ended = await getRun(kv, id, Date.now());
    assert.deepEqual(ended?.batch.counts, { succeeded: TOTAL, errored: 0 });
    assert.equal(ended?.batch.end, "completed");
    assert.equal(completed.size, TOTAL, "every request was answered");
    for (const [custom, times] of completed) assert.equal(times, 1, `${custom} ran to completion once`);
    // The killed instance's held requests did reach the upstream before it died, and were run again.
    assert.equal(upstream.requests.length, TOTAL + CONCURRENCY);
    assert.equal(await second.stop(), 0);
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

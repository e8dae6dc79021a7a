/**
 * @module A gateway stopped as Deno Deploy stops an instance (docs/operating.md, "Deno Deploy"): SIGINT, with SIGKILL 5 s
 * later. With a stream held open, it exits within those 5 s, the held connection closed, and KV holds what was used:
 * every request in the request log, though usage is flushed only every minute, and the limit counter at the
 * requests made, its leased share given back.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, bodyReader, messagesBody, within } from "../_helpers.ts";
import { requestLog } from "../../src/usage/query.ts";
import { denoMain, processConfigYaml, runCommand, startProcess } from "../_process.ts";

/** The platform's SIGKILL after its SIGINT. */
const KILL_AFTER_MS = 5000;

/** Every count of the token's requests_per_minute counter, whatever minutes the test spans. */
async function requestsCounted(kv: Deno.Kv, tokenId: string): Promise<bigint> {
  let total = 0n;
  for await (const entry of kv.list({ prefix: ["limit", "token", tokenId, "requests", "minute"] })) {
    total += (entry.value as Deno.KvU64).value;
  }
  return total;
}

Deno.test("SIGINT on Deno Deploy: exit within 5 s with a stream open, usage written and leased shares given back", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-deploy-stop-" });
  await using upstream = fakeUpstream();
  const held = controlledStream();
  let calls = 0;
  upstream.routes.set("POST /up/v1/messages", () => ++calls <= 3 ? jsonReply(anthropicMessage()) : held.response);
  try {
    const config = `${dir}/gateway.yaml`;
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`) +
      "usage: { flush_ms: 60000 }\n";
    await Deno.writeTextFile(config, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-deploy-stop" };
    const create = denoMain(dir, "token", "create", "--group", "default", "--requests-per-minute", "1000", "--json");
    const created = await runCommand([...create, "--config", config], env);
    assert.equal(created.code, 0, created.stderr);
    const { token: record, secret } = JSON.parse(created.stdout);
    // As the platform starts it: DENO_DEPLOY=1 and the default 30 s shutdown_grace_ms, which cannot fit in 5 s.
    await using gateway = await startProcess({
      command: denoMain(dir, "serve", "--config", config),
      // The platform's own KV stands in as the file the CLI made the token in.
      env: { ...env, DENO_DEPLOY: "1", MODELGATE_KV: `${dir}/gateway.kv` },
    });
    const headers = { "x-api-key": secret, "content-type": "application/json" };
    const post = (body: Record<string, unknown>) =>
      fetch(`${gateway.url}/v1/messages`, { method: "POST", headers, body: JSON.stringify(body) });
    for (let i = 0; i < 3; i++) {
      const res = await post(messagesBody({ model: "m1" }));
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    // The stream's first event is there before it is asked for, so its headers go out at once; it never ends.
    held.send(
      'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}\n\n',
    );
    const streaming = await within(post(messagesBody({ model: "m1", stream: true })), 15_000, "the stream's head");
    assert.equal(streaming.status, 200);
    await using body = bodyReader(streaming);
    await body.next();
    {
      // While it runs, the instance holds a leased share: KV counts more than the four requests.
      using kv = await Deno.openKv(`${dir}/gateway.kv`);
      assert.ok(await requestsCounted(kv, record.id) > 4n, "a share was leased");
    }

    const signalled = performance.now();
    Deno.kill(gateway.pid, "SIGINT");
    // The held stream is cut, and its connection closed, before the platform would kill the process.
    await within(body.rest().catch(() => ""), KILL_AFTER_MS, "the held stream's end");
    const code = await within(gateway.stop(), KILL_AFTER_MS, "the exit after SIGINT");
    const tookMs = performance.now() - signalled;
    held.end();
    assert.equal(code, 0);
    assert.ok(tookMs < KILL_AFTER_MS, `exited ${Math.round(tookMs)} ms after SIGINT`);
    assert.ok(gateway.stderr.some((line) => line.includes("for up to 2000 ms")), gateway.stderr.join("\n"));

    using kv = await Deno.openKv(`${dir}/gateway.kv`);
    assert.equal(await requestsCounted(kv, record.id), 4n, "the share's unused part went back to KV");
    const logged = await requestLog(kv, { limit: 10 });
    assert.equal(logged.length, 4, "every request's usage was written on the way out");
    assert.deepEqual(logged.map((entry) => entry.stream).sort(), [false, false, false, true]);
  } finally {
    held.end();
    await Deno.remove(dir, { recursive: true });
  }
});

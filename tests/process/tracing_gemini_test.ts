/**
 * @module A Gemini client's token sent as the `key` query parameter, with OTEL_DENO=true: the gateway's own spans (the
 * model call, its attempt and the fetch beneath) and its exported log line never hold it. The runtime's server span
 * records the query string as sent, as docs/operating.md says; that is checked too, so the doc hears of a change.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, readText } from "../_helpers.ts";
import { attr, fetchUnder, otlpEnv, otlpReceiver, treeOf } from "../_otlp_receiver.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";

Deno.test("a Gemini client's ?key= reaches no span or log record of the gateway's own", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-tracing-gemini-" });
  await using receiver = otlpReceiver();
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage()));
  try {
    const configFile = `${dir}/gateway.yaml`;
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`);
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-gemini" };
    const { token } = await cliToken(dir, configFile, env);
    await using gateway = await startProcess({
      command: denoMain(dir, "serve", "--config", configFile),
      env: { ...env, ...otlpEnv(receiver) },
    });
    const res = await fetch(`${gateway.url}/v1beta/models/m1:generateContent?key=${token}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "req-gem" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    });
    assert.equal(res.status, 200, await readText(res));
    const { model, attempts, server } = await treeOf(receiver, "req-gem");
    assert.deepEqual(attr(model, "modelgate.client.protocol"), { stringValue: "gemini" });
    for (const span of [model, ...attempts, await fetchUnder(receiver, attempts[0])]) {
      assert.ok(!JSON.stringify(span).includes(token), `${span.name} holds the key`);
    }
    assert.deepEqual(attr(server, "url.query"), { stringValue: `key=${token}` });
    const logged = await receiver.waitFor(
      "the request's log line",
      () => receiver.logs.flatMap((log) => log.split("\n")).find((line) => line.includes('"request_id":"req-gem"')),
    );
    assert.ok(!logged.includes(token) && !logged.includes("key="), logged);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

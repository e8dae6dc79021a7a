/**
 * @module A Gemini client's token with OTEL_DENO=true: sent as x-goog-api-key it reaches no span or log record; sent as
 * the `key` query parameter it is refused 401, because the runtime's server span records the query string as sent
 * (docs/operating.md says so; that is checked too, so the doc hears of a change).
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, readText } from "../_helpers.ts";
import { attr, fetchUnder, otlpEnv, otlpReceiver, treeOf } from "../_otlp_receiver.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";

Deno.test("with tracing on, a Gemini token reaches no span or log record, and ?key= is refused", async () => {
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
    const ask = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] });
    const refused = await fetch(`${gateway.url}/v1beta/models/m1:generateContent?key=${token}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "req-gem-query" },
      body: ask,
    });
    const refusal = await readText(refused);
    assert.equal(refused.status, 401, refusal);
    assert.equal(JSON.parse(refusal).error.status, "UNAUTHENTICATED");
    assert.match(JSON.parse(refusal).error.message, /x-goog-api-key/);
    const res = await fetch(`${gateway.url}/v1beta/models/m1:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "req-gem", "x-goog-api-key": token },
      body: ask,
    });
    assert.equal(res.status, 200, await readText(res));
    const { model, attempts, server } = await treeOf(receiver, "req-gem");
    assert.deepEqual(attr(model, "modelgate.client.protocol"), { stringValue: "gemini" });
    for (const span of [server, model, ...attempts, await fetchUnder(receiver, attempts[0])]) {
      assert.ok(!JSON.stringify(span).includes(token), `${span.name} holds the key`);
    }
    // The refused request's URL was recorded before the gateway saw it: why it is refused (see operating.md).
    const refusedSpan = await receiver.waitFor(
      "the refused request's server span",
      () =>
        receiver.spans.find((span) =>
          JSON.stringify(attr(span, "url.query")) === JSON.stringify({ stringValue: `key=${token}` })
        ),
    );
    assert.deepEqual(attr(refusedSpan, "http.response.status_code"), { stringValue: "401" });
    const logged = await receiver.waitFor(
      "the request's log line",
      () => receiver.logs.flatMap((log) => log.split("\n")).find((line) => line.includes('"request_id":"req-gem"')),
    );
    assert.ok(!logged.includes(token), logged);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

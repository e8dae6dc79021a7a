/**
 * @module No secret in logs or metrics: a known client token and the upstream keys go through good, refused,
 * failed and streamed requests (an upstream even echoes its key back), then every log line and the metrics page
 * are searched for them.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { anthropicMessage, fixture, messagesBody, readText, startGateway, UPSTREAM_KEYS } from "../_helpers.ts";
import { parsePrometheusText } from "../_prom_text.ts";

Deno.test("tokens, upstream keys and upstream addresses appear in no log line, on /metrics or in the probes", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, {
    env: { MODELGATE_ADMIN_KEY: "admin-key-never-logged-0123456789abcd" },
    failureThreshold: 10,
  });
  const token = gw.tokens.default;
  const revoked = await gw.store.createToken({ group: "default" });
  await gw.store.revokeToken(revoked.record.id);
  const send = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await gw.post(path, body, headers);
    await readText(res);
    return res.status;
  };

  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  assert.equal(await send("/v1/messages", messagesBody()), 200);
  assert.equal(await send("/v1/messages", messagesBody(), { authorization: `Bearer ${token}`, "x-api-key": "" }), 200);
  assert.equal(await send("/v1/messages", messagesBody(), { "x-api-key": revoked.secret }), 401);
  assert.equal(await send("/v1/messages", messagesBody(), { "x-api-key": `${token}x` }), 401);
  assert.equal(await send("/v1/messages", messagesBody({ model: token })), 404);
  assert.equal(await send("/v1/messages", { model: "claude-test", messages: token }), 400);
  assert.equal(await send(`/v1/${token}`, {}), 404);
  assert.equal(await send("/v1/messages", messagesBody(), { "x-request-id": token }), 200);

  // A hostile upstream that echoes the key it was sent, in a stream and in a JSON error.
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic_text.sse")));
  assert.equal(await send("/v1/messages", messagesBody({ stream: true })), 200);
  upstream.routes.set("POST /anth/v1/messages", (seen) => {
    const stream = controlledStream();
    stream.send(`event: ping\ndata: {"type":"ping","key":"${seen.headers.get("x-api-key")}"}\n\n`);
    stream.cut();
    return stream.response;
  });
  // The cut may land before the first chunk is read (a failover, then 502) or after it (an in-band error).
  assert.ok([200, 502].includes(await send("/v1/messages", messagesBody({ stream: true }))));
  // Last: the breaker threshold is raised above the failures this test causes.
  upstream.routes.set("POST /anth/v1/messages", (seen) =>
    jsonReply({
      type: "error",
      error: { type: "api_error", message: `bad key ${seen.headers.get("x-api-key")}` },
    }, 500));
  assert.equal(await send("/v1/messages", messagesBody()), 500);
  upstream.routes.set("POST /oai/v1/chat/completions", () => jsonReply({ error: { message: "down" } }, 503));
  const chat = { model: "gpt-test", messages: [{ role: "user", content: "Hi" }] };
  assert.equal(await send("/v1/chat/completions", chat, { "x-api-key": gw.tokens.oa }), 503);

  const metricsRes = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const metricsPage = await metricsRes.text();
  parsePrometheusText(metricsPage);
  const probes = await Promise.all(
    ["/healthz", "/readyz"].map(async (path) => await (await fetch(gw.url + path)).text()),
  );
  const page = [metricsPage, ...probes].join("\n");
  const logText = gw.logs.map((line) => JSON.stringify(line)).join("\n");
  assert.ok(gw.logs.filter((line) => line.event === "request").length >= 11, "every request was logged");
  const secrets = [
    token,
    gw.tokens.oa,
    revoked.secret,
    UPSTREAM_KEYS.TEST_ANTHROPIC_KEY,
    UPSTREAM_KEYS.TEST_OPENAI_KEY,
    "admin-key-never-logged-0123456789abcd",
    upstream.url.replace("http://", ""),
  ];
  for (const secret of secrets) {
    assert.ok(!logText.includes(secret), `log lines contain ${secret}`);
    assert.ok(!page.includes(secret), `metrics or probe page contains ${secret}`);
  }
});

Deno.test("an upstream that quotes the gateway's key in an error never gets it to the client", async () => {
  await using upstream = fakeUpstream();
  const echo = (seen: { headers: Headers }) => {
    const key = seen.headers.get("x-api-key") ?? seen.headers.get("authorization");
    return jsonReply({ type: "error", error: { type: "invalid_request_error", message: `bad key ${key}` } }, 400);
  };
  upstream.routes.set("POST /anth/v1/messages", echo);
  await using gw = await startGateway(upstream.url);
  const passthrough = await (await gw.post("/v1/messages", messagesBody())).text();
  const translated = await (await gw.post("/v1/chat/completions", {
    model: "claude-test",
    messages: [{ role: "user", content: "Hi" }],
  }, { "x-api-key": gw.tokens.oa })).text();
  for (const text of [passthrough, translated]) {
    assert.ok(!text.includes(UPSTREAM_KEYS.TEST_ANTHROPIC_KEY), `the key reached the client: ${text}`);
    assert.match(text, /bad key \[redacted\]/);
  }
});

Deno.test("request values a translation note would quote are logged as other, never verbatim", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const token = gw.tokens.oa;
  const res = await gw.post("/v1/chat/completions", {
    model: "claude-test",
    messages: [{ role: "user", content: [{ type: token }, { type: "text", text: "Hi" }] }],
    tools: [{ type: `${token}-tool` }],
  }, { "x-api-key": token });
  await res.body?.cancel();
  assert.ok(gw.logs.some((line) => line.event === "translate_drop"), "the drops are logged");
  assert.ok(!JSON.stringify(gw.logs).includes(token), "a client value was logged verbatim");
});

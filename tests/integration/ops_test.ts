/** @module GET /metrics, /healthz and /readyz: contents, the optional admin key, and good and bad states. */
import assert from "node:assert/strict";
import { createStore } from "../../src/access/store.ts";
import { createApp } from "../../src/app.ts";
import { parseConfig } from "../../src/core/config_load.ts";
import { buildDeps } from "../../src/serve/deps.ts";
import { controlledStream, fakeUpstream, jsonReply, resetServer } from "../_fake_upstream.ts";
import {
  anthropicMessage,
  BULK_MODELS,
  firstEvent,
  fixture,
  messagesBody,
  readText,
  startGateway,
  testConfigYaml,
  UPSTREAM_KEYS,
} from "../_helpers.ts";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";

async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.json() };
}

async function scrape(url: string) {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return parsePrometheusText(await res.text());
}

Deno.test("GET /metrics counts requests by route, status, model and upstream, and tokens by model", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  for (let i = 0; i < 2; i++) await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
  await (await gw.post("/v1/messages", messagesBody({ model: "no-such-model-xyz" }))).body?.cancel();
  const page = await scrape(gw.url);
  const ok = { route: "/v1/messages", status: "200", model: "claude-test", upstream: "anth" };
  assert.equal(sampleValue(page, "modelgate_requests_total", ok), 2);
  const unknown = { route: "/v1/messages", status: "404", model: "none", upstream: "none" };
  assert.equal(sampleValue(page, "modelgate_requests_total", unknown), 1);
  assert.equal(sampleValue(page, "modelgate_tokens_total", { model: "claude-test", type: "input" }), 10);
  assert.equal(sampleValue(page, "modelgate_tokens_total", { model: "claude-test", type: "output" }), 4);
  assert.equal(sampleValue(page, "modelgate_upstream_attempts_total", { upstream: "anth", outcome: "ok" }), 2);
  assert.equal(sampleValue(page, "modelgate_request_duration_seconds_count", { model: "claude-test" }), 2);
  assert.equal(sampleValue(page, "modelgate_time_to_first_byte_seconds_count", { model: "claude-test" }), 2);
});

Deno.test("GET /metrics counts upstream failures by kind and failovers, per deployment", async () => {
  await using upstream = fakeUpstream();
  // A 529 without retry-after is not asked of the same deployment again in the request.
  for (const path of ["/ha1/v1/messages", "/ha2/v1/messages"]) {
    upstream.routes.set(`POST ${path}`, () => jsonReply({ type: "error" }, 529));
  }
  await using gw = await startGateway(upstream.url);
  await (await gw.post("/v1/messages", messagesBody({ model: "claude-ha" }))).body?.cancel();
  const page = await scrape(gw.url);
  assert.deepEqual(upstream.requests.map((r) => r.path), ["/ha1/v1/messages", "/ha2/v1/messages"]);
  const failures = (name: string) =>
    sampleValue(page, "modelgate_upstream_failures_total", { upstream: name, model: "claude-ha", kind: "overloaded" });
  assert.equal(failures("ha1"), 1);
  assert.equal(failures("ha2"), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_failovers_total", { upstream: "ha1", model: "claude-ha" }), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_failovers_total", { upstream: "ha2" }), undefined);
  assert.equal(sampleValue(page, "modelgate_request_errors_total", { route: "/v1/messages", kind: "overloaded" }), 1);
});

Deno.test("GET /metrics shows health per upstream and per deployment, labelled by configured names only", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply({ type: "error" }, 500));
  await using gw = await startGateway(upstream.url, { failureThreshold: 1 });
  await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
  await (await gw.post("/v1/messages", messagesBody({ model: "x".repeat(300) }))).body?.cancel();
  const page = await scrape(gw.url);
  const deployment = (model: string) => ({ upstream: "anth", model });
  assert.equal(sampleValue(page, "modelgate_deployment_available", deployment("claude-test")), 0);
  assert.equal(sampleValue(page, "modelgate_deployment_recent_failures", deployment("claude-test")), 1);
  assert.equal(sampleValue(page, "modelgate_deployment_available", deployment("alias")), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_available", { upstream: "anth" }), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_recent_failures", { upstream: "anth" }), 0);
  const models = new Set(page.get("modelgate_deployment_available")!.samples.map((sample) => sample.labels.model));
  assert.equal(models.size, 2 + 1 + 1 + BULK_MODELS.length + 1 + 1, "one series per configured model id");
});

Deno.test("GET /metrics shows a stream as in flight and open until it ends", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  upstream.routes.set("POST /anth/v1/messages", () => stream.response);
  await using gw = await startGateway(upstream.url);
  const whole = fixture("anthropic_text.sse");
  const first = firstEvent(whole);
  const pending = gw.post("/v1/messages", messagesBody({ stream: true }));
  stream.send(first);
  const res = await pending;
  assert.equal(res.status, 200);
  let page = await scrape(gw.url);
  assert.equal(sampleValue(page, "modelgate_requests_in_flight", {}), 1);
  assert.equal(sampleValue(page, "modelgate_streams_open", {}), 1);
  stream.send(whole.slice(first.length));
  stream.end();
  await readText(res);
  page = await scrape(gw.url);
  assert.equal(sampleValue(page, "modelgate_requests_in_flight", {}), 0);
  assert.equal(sampleValue(page, "modelgate_streams_open", {}), 0);
});

Deno.test("GET /metrics needs the admin key when the config says so", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, {
    extraYaml: "metrics: { require_admin_key: true }\n",
    env: { MODELGATE_ADMIN_KEY: "admin-secret-1-0123456789-abcdefghij" },
  });
  const attempts: Record<string, string>[] = [
    {},
    { authorization: "Bearer wrong" },
    { authorization: `Bearer ${gw.tokens.default}` },
  ];
  for (const headers of attempts) {
    const res = await fetch(`${gw.url}/metrics`, { headers });
    assert.equal(res.status, 401);
    await res.body?.cancel();
  }
  const res = await fetch(`${gw.url}/metrics`, {
    headers: { authorization: "Bearer admin-secret-1-0123456789-abcdefghij" },
  });
  assert.equal(res.status, 200);
  parsePrometheusText(await res.text());
});

Deno.test("GET /metrics refuses everyone when the admin key is required but not set", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { extraYaml: "metrics: { require_admin_key: true }\n" });
  const res = await fetch(`${gw.url}/metrics`);
  assert.equal(res.status, 503);
  assert.match((await res.json()).error, /MODELGATE_ADMIN_KEY/);
});

Deno.test("GET /healthz shows every upstream ok, with whether it has a key and its deployments", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const { status, body } = await getJson(`${gw.url}/healthz`);
  assert.equal(status, 200);
  assert.equal(body.status, "ok");
  const upstreams = body.upstreams as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(upstreams), ["anth", "oai", "nokey", "bulk", "ha1", "ha2", "hb1", "hb2"]);
  const ok = { state: "ok", cooling_until: null, recent_failures: 0 };
  const models = { "claude-test": ok, alias: ok };
  assert.deepEqual(upstreams.anth, { ...ok, has_key: true, credential: "untried", models });
  assert.deepEqual([upstreams.nokey.has_key, upstreams.nokey.credential], [false, "not_set"]);
  assert.deepEqual(Object.keys(upstreams.bulk.models as object), BULK_MODELS);
});

Deno.test("GET /healthz shows a failing deployment cooling down beside its upstream, and /readyz stays ready", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply({ type: "error" }, 500));
  await using gw = await startGateway(upstream.url);
  // Each request counts once however often it was retried: the default threshold of 3 takes three requests.
  for (let i = 0; i < 3; i++) await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
  const { status, body } = await getJson(`${gw.url}/healthz`);
  assert.equal(status, 200, "liveness does not depend on upstreams");
  type Upstream = { state: string; recent_failures: number; models: Record<string, Record<string, unknown>> };
  const anth = (body.upstreams as Record<string, Upstream>).anth;
  const failing = anth.models["claude-test"];
  assert.equal(failing.state, "cooling_down");
  assert.equal(failing.recent_failures, 3);
  assert.ok(Date.parse(failing.cooling_until as string) > Date.now());
  assert.deepEqual(anth.models.alias, { state: "ok", cooling_until: null, recent_failures: 0 });
  assert.deepEqual([anth.state, anth.recent_failures], ["ok", 0], "the upstream as a whole answers");
  const ready = await getJson(`${gw.url}/readyz`);
  assert.equal(ready.status, 200, "a failing model does not make the instance unready");
  assert.deepEqual(ready.body.usable_upstreams, ["anth", "oai", "bulk", "ha1", "ha2", "hb1", "hb2"]);
});

Deno.test("GET /readyz is 200 when KV answers, the config is loaded and an upstream is usable", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const { status, body } = await getJson(`${gw.url}/readyz`);
  assert.equal(status, 200);
  assert.deepEqual(body, {
    status: "ready",
    checks: { config: "ok", kv: "ok", upstreams: "ok" },
    usable_upstreams: ["anth", "oai", "bulk", "ha1", "ha2", "hb1", "hb2"],
  });
});

Deno.test("GET /readyz is 503 when no upstream has a key", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { env: { TEST_ANTHROPIC_KEY: "", TEST_OPENAI_KEY: "" } });
  const { status, body } = await getJson(`${gw.url}/readyz`);
  assert.equal(status, 503);
  assert.equal(body.status, "not_ready");
  assert.match((body.checks as Record<string, string>).upstreams, /none usable/);
});

Deno.test("GET /readyz is 503 when every keyed upstream cannot be reached and is cooling down", async () => {
  await using reset = resetServer();
  await using gw = await startGateway(reset.url, { failureThreshold: 1 });
  const chat = (model: string) => ({ model, messages: [{ role: "user", content: "Hi" }] });
  const calls = [
    gw.post("/v1/messages", messagesBody()),
    gw.post("/v1/messages", messagesBody({ model: "claude-ha" })),
    gw.post("/v1/chat/completions", chat("gpt-test"), { "x-api-key": gw.tokens.oa }),
    gw.post("/v1/chat/completions", chat("gpt-ha"), { "x-api-key": gw.tokens.oa }),
    gw.post("/v1/messages", messagesBody({ model: "bulk-00" }), { "x-api-key": gw.tokens.bulk }),
  ];
  for (const call of calls) {
    const res = await call;
    assert.equal(res.status, 502);
    await res.body?.cancel();
  }
  const { status, body } = await getJson(`${gw.url}/readyz`);
  assert.equal(status, 503);
  assert.deepEqual(body.usable_upstreams, []);
  const health = await getJson(`${gw.url}/healthz`);
  const anth = (health.body.upstreams as Record<string, { state: string; models: Record<string, { state: string }> }>)
    .anth;
  assert.equal(anth.state, "cooling_down");
  assert.equal(anth.models["claude-test"].state, "ok", "a connection failure is the upstream's, not the model's");
});

Deno.test("GET /readyz is 503 when KV cannot be reached", async () => {
  const config = parseConfig(testConfigYaml("http://127.0.0.1:9"), "test.yaml");
  const kv = await Deno.openKv(":memory:");
  const env = (name: string) => (UPSTREAM_KEYS as Record<string, string>)[name];
  const app = createApp(buildDeps(config, createStore(kv), { env, log: () => {} }));
  kv.close();
  const res = await app(new Request("http://gateway.test/readyz"));
  assert.equal(res.status, 503);
  assert.equal((await res.json()).checks.kv, "unreachable");
});

/** @module The per-request log line and request ids, over real HTTP against the fake upstream. */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { anthropicMessage, fixture, messagesBody, readText, startGateway } from "../_helpers.ts";

function requestLines(logs: Record<string, unknown>[]): Record<string, unknown>[] {
  return logs.filter((line) => line.event === "request");
}

Deno.test("a relayed message logs one request line with who, what, where, how long and how much", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const tokenId = (await gw.store.findToken(gw.tokens.default))?.id;
  const lines = requestLines(gw.logs);
  assert.equal(lines.length, 1);
  const line = lines[0];
  assert.equal(line.request_id, res.headers.get("x-request-id"));
  assert.equal(line.token_id, tokenId);
  assert.equal(line.group, "default");
  assert.equal(line.model, "claude-test");
  assert.equal(line.upstream, "anth");
  assert.equal(line.protocol, "anthropic");
  assert.equal(line.route, "/v1/messages");
  assert.equal(line.method, "POST");
  assert.equal(line.status, 200);
  assert.equal(line.stream, false);
  assert.equal(typeof line.duration_ms, "number");
  assert.equal(typeof line.ttfb_ms, "number");
  assert.ok((line.ttfb_ms as number) <= (line.duration_ms as number));
  assert.deepEqual(line.attempts, [{ upstream: "anth", outcome: "ok", status: 200 }]);
  assert.equal(line.input_tokens, 5);
  assert.equal(line.output_tokens, 2);
  assert.equal(line.error, undefined);
});

Deno.test("a streamed message is logged once, when the stream ends, with its usage", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic_text.sse")));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody({ stream: true }));
  await readText(res);
  const lines = requestLines(gw.logs);
  assert.equal(lines.length, 1);
  assert.equal(lines[0].stream, true);
  assert.equal(lines[0].input_tokens, 9);
  assert.equal(lines[0].output_tokens, 3);
  assert.equal(lines[0].usage_complete, true);
});

Deno.test("a failed request logs its error kind and every upstream attempt", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply({ type: "error" }, 500));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 500);
  await res.body?.cancel();
  const [line] = requestLines(gw.logs);
  assert.equal(line.level, "warn");
  assert.equal(line.status, 500);
  assert.equal(line.error, "upstream");
  assert.ok((line.attempts as unknown[]).length >= 2, "the same upstream is retried");
  assert.ok((line.attempts as { outcome: string }[]).every((a) => a.outcome === "upstream"));
});

Deno.test("a request refused before auth is logged without a token id", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": "sk-unknown" });
  assert.equal(res.status, 401);
  await res.body?.cancel();
  const [line] = requestLines(gw.logs);
  assert.equal(line.status, 401);
  assert.equal(line.error, "authentication");
  assert.equal(line.token_id, undefined);
});

Deno.test("a sane client x-request-id is kept in both headers, sent upstream and logged", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody(), { "x-request-id": "trace-42.a:b_c" });
  await res.body?.cancel();
  assert.equal(res.headers.get("x-request-id"), "trace-42.a:b_c");
  assert.equal(res.headers.get("request-id"), "trace-42.a:b_c");
  assert.equal(upstream.requests[0].headers.get("x-request-id"), "trace-42.a:b_c");
  assert.equal(requestLines(gw.logs)[0].request_id, "trace-42.a:b_c");
});

Deno.test("an insane client x-request-id is replaced everywhere by a new one", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody(), { "x-request-id": "x".repeat(200) });
  await res.body?.cancel();
  const id = res.headers.get("x-request-id") ?? "";
  assert.match(id, /^req_[0-9a-f]{24}$/);
  assert.equal(res.headers.get("request-id"), id);
  assert.equal(upstream.requests[0].headers.get("x-request-id"), id);
  assert.equal(requestLines(gw.logs)[0].request_id, id);
});

Deno.test("every response carries x-request-id; only Anthropic routes add request-id", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const cases = [
    { path: "/v1/chat/completions", anthropic: false },
    { path: "/v1/nowhere", anthropic: false },
    { path: "/v1/messages", anthropic: true },
  ];
  for (const c of cases) {
    const res = await gw.post(c.path, { model: "nope" }, { "x-request-id": "id-1" });
    await res.body?.cancel();
    assert.equal(res.headers.get("x-request-id"), "id-1", c.path);
    assert.equal(res.headers.get("request-id"), c.anthropic ? "id-1" : null, c.path);
  }
  for (const path of ["/healthz", "/readyz", "/metrics"]) {
    const res = await fetch(`${gw.url}${path}`, { headers: { "x-request-id": "probe-1" } });
    await res.body?.cancel();
    assert.equal(res.headers.get("x-request-id"), "probe-1", path);
  }
});

Deno.test("probes and scrapes neither log a request line nor count as traffic", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  for (const path of ["/healthz", "/readyz", "/metrics"]) await (await fetch(`${gw.url}${path}`)).body?.cancel();
  assert.equal(requestLines(gw.logs).length, 0);
  assert.equal(gw.exchanges.length, 0);
});

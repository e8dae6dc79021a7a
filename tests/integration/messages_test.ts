/** @module POST /v1/messages and count_tokens, non-streamed: forwarding rules and every error status. */
import assert from "node:assert/strict";
import { fakeUpstream, hang, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway, UPSTREAM_KEYS, within } from "../_helpers.ts";

Deno.test("a message is relayed with the upstream key and never the client's token", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody(), { authorization: `Bearer ${gw.tokens.default}` });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  assert.match(res.headers.get("request-id") ?? "", /^req_/);
  assert.deepEqual(await res.json(), anthropicMessage());
  const seen = upstream.requests[0];
  assert.equal(seen.headers.get("x-api-key"), UPSTREAM_KEYS.TEST_ANTHROPIC_KEY);
  assert.equal(seen.headers.get("authorization"), null);
  for (const [name, value] of seen.headers) assert.ok(!value.includes(gw.tokens.default), `token leaked in ${name}`);
});

Deno.test("anthropic-version defaults to 2023-06-01 and is forwarded when sent", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
  await (await gw.post("/v1/messages", messagesBody(), { "anthropic-version": "2026-10-21" })).body?.cancel();
  await (await gw.post("/v1/messages", messagesBody(), { "vendorx-version": "2024-01-01" })).body?.cancel();
  assert.equal(upstream.requests[0].headers.get("anthropic-version"), "2023-06-01");
  assert.equal(upstream.requests[1].headers.get("anthropic-version"), "2026-10-21");
  assert.equal(upstream.requests[2].headers.get("vendorx-version"), "2024-01-01");
  assert.equal(upstream.requests[2].headers.get("anthropic-version"), "2024-01-01");
});

Deno.test("anthropic-beta and vendorx-beta are forwarded unchanged", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const beta = "interleaved-thinking-2025-05-14,context-1m-2025-08-07, effort-2025-11-24";
  await (await gw.post("/v1/messages", messagesBody(), { "anthropic-beta": beta, "vendorx-beta": "b1,b2" })).body
    ?.cancel();
  assert.equal(upstream.requests[0].headers.get("anthropic-beta"), beta);
  assert.equal(upstream.requests[0].headers.get("vendorx-beta"), "b1,b2");
});

Deno.test("unknown body fields pass through untouched and an alias becomes its upstream id", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const extra = { context_management: { edits: [{ type: "clear" }] }, metadata: { user_id: "u1" }, temperature: 0.5 };
  const res = await gw.post("/v1/messages?beta=true", messagesBody({ model: "alias", ...extra }));
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const seen = upstream.requests[0];
  assert.deepEqual(seen.body, messagesBody({ model: "claude-test", ...extra }));
  assert.equal(seen.path, "/anth/v1/messages");
  assert.equal(seen.search, "?beta=true");
});

Deno.test("a body that needs no change is forwarded byte for byte", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const raw =
    '{ "model": "claude-test",\n  "max_tokens": 16, "temperature": 1.0, "messages": [{"role":"user","content":"\\u00e9"}] }';
  await (await gw.post("/v1/messages", raw)).body?.cancel();
  assert.equal(upstream.requests[0].raw, raw);
});

Deno.test("count_tokens is relayed to the upstream's count_tokens without max_tokens", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages/count_tokens", () => jsonReply({ input_tokens: 42 }));
  await using gw = await startGateway(upstream.url);
  const body = { model: "claude-test", messages: [{ role: "user", content: "Hi" }] };
  const res = await gw.post("/v1/v1/messages/count_tokens?beta=true", body);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { input_tokens: 42 });
});

const BAD_BODIES = [
  { name: "bad JSON", body: "{nope", message: /not valid JSON/ },
  { name: "a JSON array", body: "[]", message: /must be a JSON object/ },
  { name: "no model", body: { max_tokens: 5, messages: [{ role: "user", content: "x" }] }, message: /^model: / },
  { name: "a number model", body: messagesBody({ model: 5 }), message: /^model: / },
  { name: "no max_tokens", body: messagesBody({ max_tokens: undefined }), message: /^max_tokens: is required/ },
  { name: "zero max_tokens", body: messagesBody({ max_tokens: 0 }), message: /^max_tokens: / },
  { name: "fractional max_tokens", body: messagesBody({ max_tokens: 1.5 }), message: /^max_tokens: / },
  { name: "empty messages", body: messagesBody({ messages: [] }), message: /^messages: must be a non-empty array/ },
  { name: "messages not an array", body: messagesBody({ messages: "hi" }), message: /^messages: / },
  {
    name: "a message without role",
    body: messagesBody({ messages: [{ content: "x" }] }),
    message: /^messages\[0\]\.role/,
  },
  {
    name: "a message without content",
    body: messagesBody({ messages: [{ role: "user" }] }),
    message: /^messages\[0\]\.content/,
  },
];

for (const c of BAD_BODIES) {
  Deno.test(`messages answer 400 invalid_request_error for ${c.name}`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url);
    const res = await gw.post("/v1/messages", c.body);
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "invalid_request_error");
    assert.match(body.error.message, c.message);
    assert.equal(upstream.requests.length, 0);
  });
}

Deno.test("a model outside the group answers 404 not_found_error pointing at GET /v1/models", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  for (const model of ["bulk-01", "no-such-model"]) {
    const res = await gw.post("/v1/messages", messagesBody({ model }));
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.equal(body.error.type, "not_found_error");
    assert.match(body.error.message, /GET \/v1\/models/);
  }
});

Deno.test("a body over the limit answers 413 request_too_large before it is read whole", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { maxBodyBytes: 1000 });
  const big = messagesBody({ messages: [{ role: "user", content: "x".repeat(5000) }] });
  const res = await gw.post("/v1/messages", big);
  assert.equal(res.status, 413);
  assert.equal((await res.json()).error.type, "request_too_large");
  // A chunked body with no content-length is refused while it streams in: the body below never ends until
  // the answer has arrived, so a gateway that waited for all of it would never answer.
  const { promise: answered, resolve: answer } = Promise.withResolvers<void>();
  let sent = 0;
  const chunks = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent++ < 3) return controller.enqueue(new TextEncoder().encode("x".repeat(600)));
      await answered;
      controller.close();
    },
  });
  const streamed = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": gw.tokens.default },
    body: chunks,
  });
  answer();
  assert.equal(streamed.status, 413);
  await streamed.body?.cancel();
});

Deno.test("a model whose upstream key is not set answers 503", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody({ model: "claude-nokey" }));
  assert.equal(res.status, 503);
  const body = await res.json();
  assert.equal(body.error.type, "api_error");
  assert.match(body.error.message, /key is not configured/);
});

Deno.test("an upstream error with a JSON body keeps its status, body and retry-after", async () => {
  await using upstream = fakeUpstream();
  const upstreamError = { type: "error", error: { type: "rate_limit_error", message: "Slow down" } };
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(upstreamError, 429, { "retry-after": "7" }));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "7");
  // An upstream that named no request id gets the gateway's in the body, as Anthropic's own errors carry one.
  assert.deepEqual(await res.json(), { ...upstreamError, request_id: res.headers.get("request-id") });
  const named = { ...upstreamError, request_id: "req_upstream_1" };
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(named, 400));
  const kept = await gw.post("/v1/messages", messagesBody());
  assert.deepEqual(await kept.json(), named, "the upstream's own request_id is kept");
});

const UPSTREAM_FAILURES = [
  { name: "401 (the gateway's key failing)", status: 401, body: '{"type":"error"}', want: 502, message: /credentials/ },
  { name: "403", status: 403, body: '{"type":"error"}', want: 502, message: /credentials/ },
  { name: "a 200 with garbage", status: 200, body: "<html>oops</html>", want: 502, message: /not JSON/ },
  { name: "a 500 with garbage", status: 500, body: "Internal Server Error", want: 502, message: /not JSON/ },
  { name: "a 501 with garbage", status: 501, body: "<html>Not Implemented</html>", want: 502, message: /not JSON/ },
  { name: "a 503 with garbage", status: 503, body: "<html>Service Unavailable</html>", want: 503, message: /not JSON/ },
  {
    name: "a 504 with garbage",
    status: 504,
    body: "Gateway Timeout",
    want: 504,
    type: "timeout_error",
    message: /not JSON/,
  },
  { name: "a 529 with garbage", status: 529, body: "busy", want: 529, type: "overloaded_error", message: /not JSON/ },
];

for (const c of UPSTREAM_FAILURES) {
  Deno.test(`an upstream answering ${c.name} gives ${c.want} ${c.type ?? "api_error"}`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /anth/v1/messages", () => new Response(c.body, { status: c.status }));
    await using gw = await startGateway(upstream.url);
    const res = await gw.post("/v1/messages", messagesBody());
    assert.equal(res.status, c.want);
    const body = await res.json();
    assert.equal(body.error.type, c.type ?? "api_error");
    assert.match(body.error.message, c.message);
    assert.ok(!JSON.stringify(body).includes(upstream.url), "upstream URL leaked");
  });
}

Deno.test("an unreachable upstream answers 502 without naming its URL", async () => {
  const closed = fakeUpstream();
  const url = closed.url;
  await closed[Symbol.asyncDispose]();
  await using gw = await startGateway(url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 502);
  const text = await res.text();
  assert.match(text, /Cannot reach upstream \\"anth\\"/);
  assert.ok(!text.includes(url.replace("http://", "")), "upstream address leaked");
  assert.ok(!JSON.stringify(gw.logs).includes(url.replace("http://", "")), "upstream address logged");
});

Deno.test("an upstream that does not answer in time gives 504 timeout_error", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", hang);
  await using gw = await startGateway(upstream.url, { timeoutMs: 200 });
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 504);
  assert.equal((await res.json()).error.type, "timeout_error");
  await within(upstream.requests[0].closed, 2000, "the upstream request closing");
});

/**
 * @module A Responses WebSocket's life beyond one response: a client that leaves mid-response, a response queued behind
 * it that must not run once the socket closed, a limited token, the drain when the gateway stops and the handshakes it
 * then refuses, and the metrics of sockets and of responses per transport.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, sseReply } from "../_fake_upstream.ts";
import { firstEvent, fixture, startGateway, waitFor, within } from "../_helpers.ts";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";
import { create, openSocket, rawHandshake } from "../_socket.ts";

const MESSAGES_PATH = "POST /anth/v1/messages";

Deno.test("a client that closes mid-response cancels the upstream request, and its usage is still recorded", async () => {
  await using upstream = fakeUpstream();
  const held = controlledStream();
  // Should the test fail with the stream still held, the fake upstream can still shut down.
  using _released = { [Symbol.dispose]: () => held.end() };
  upstream.routes.set(MESSAGES_PATH, () => held.response);
  await using gw = await startGateway(upstream.url);
  const socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create());
  await waitFor(() => upstream.requests[0]);
  held.send(firstEvent(fixture("anthropic/text.sse")));
  assert.equal((await socket.next()).type, "response.created");
  socket.ws.close();
  await socket.closed;
  await within(upstream.requests[0].closed, 5000, "the upstream request closing");
  const exchange = await waitFor(() => gw.exchanges.find((e) => e.route === "/v1/responses" && e.method === "POST"));
  // As for a client that leaves an HTTP stream: a 200 whose usage is what was seen, not a failure.
  assert.deepEqual([exchange.status, exchange.error], [200, undefined]);
  assert.equal(exchange.transport, "websocket");
  assert.equal(exchange.usage?.input_tokens, 12);
  assert.equal(exchange.usage_complete, false);
  await gw.flush();
  const logged = await Array.fromAsync(gw.store.kv.list({ prefix: ["request_log"] }));
  assert.ok(
    logged.some((entry) => (entry.value as Record<string, unknown>).transport === "websocket"),
    "the request log says the transport",
  );
});

Deno.test("a response waiting its turn does not run once its socket has closed", async () => {
  await using upstream = fakeUpstream();
  const held = controlledStream();
  // Should the test fail with the stream still held, the fake upstream can still shut down.
  using _released = { [Symbol.dispose]: () => held.end() };
  const asked = (seen: { body?: Record<string, unknown> }) =>
    (seen.body?.messages as { content: { text: string }[] }[])[0].content[0].text;
  upstream.routes.set(
    MESSAGES_PATH,
    (seen) => asked(seen) === "held" ? held.response : sseReply(fixture("anthropic/text.sse")),
  );
  await using gw = await startGateway(upstream.url);
  const headers = { authorization: `Bearer ${gw.tokens.default}` };
  const socket = await openSocket(gw.url, headers);
  socket.send(create({ input: "held", stream_id: "x" }));
  socket.send(create({ input: "queued", stream_id: "x" }));
  await waitFor(() => upstream.requests[0]);
  socket.ws.close();
  await socket.closed;
  await within(upstream.requests[0].closed, 5000, "the running response's upstream request closing");
  // Another socket's response, sent after the close, reaches the upstream after anything the closed one still ran.
  await using next = await openSocket(gw.url, headers);
  next.send(create({ input: "after the close" }));
  assert.equal((await next.until("response.completed")).at(-1)!.type, "response.completed");
  assert.deepEqual(upstream.requests.map(asked), ["held", "after the close"]);
});

Deno.test("a limited token gets its 429 as an error event with the retry time, on an open socket", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { requests_per_minute: 1 } });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${secret}` });
  socket.send(create());
  await socket.until("response.completed");
  socket.send(create());
  const refused = await socket.next();
  const error = refused.error as { type: string; headers: Record<string, string> };
  assert.equal(refused.type, "error");
  assert.equal(refused.status, 429);
  assert.equal(error.type, "rate_limit_error");
  assert.match(error.headers["retry-after"], /^\d+$/);
  assert.equal(upstream.requests.length, 1);
});

Deno.test("a stopping gateway lets the running response finish, refuses new ones, then closes with 1001", async () => {
  await using upstream = fakeUpstream();
  const held = controlledStream();
  // Should the test fail with the stream still held, the fake upstream can still shut down.
  using _released = { [Symbol.dispose]: () => held.end() };
  upstream.routes.set(MESSAGES_PATH, () => held.response);
  const stopping = new AbortController();
  await using gw = await startGateway(upstream.url, { stopping: stopping.signal });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create());
  await waitFor(() => upstream.requests[0]);
  stopping.abort();
  socket.send(create({ stream_id: "new" }));
  const refused = await socket.next();
  assert.equal((refused.error as { code: string }).code, "server_shutting_down");
  held.send(fixture("anthropic/text.sse"));
  held.end();
  assert.equal((await socket.until("response.completed")).at(-1)!.type, "response.completed");
  assert.deepEqual(await socket.closed, { code: 1001, reason: "gateway stopping" });
});

Deno.test("a stopping gateway refuses a new socket's handshake with a 503 and a retry-after, before the upgrade", async () => {
  await using upstream = fakeUpstream();
  const stopping = new AbortController();
  await using gw = await startGateway(upstream.url, { stopping: stopping.signal });
  const headers = { authorization: `Bearer ${gw.tokens.default}` };
  assert.equal((await rawHandshake(gw.url, headers)).status, 101, "taken before the gateway stops");
  stopping.abort();
  const refused = await rawHandshake(gw.url, headers);
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get("retry-after"), "1");
  assert.match(JSON.parse(refused.body).error.message, /shutting down; connect again/);
});

Deno.test("GET /metrics counts open sockets and Responses by transport", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  await (await gw.post("/v1/responses", { model: "claude-test", input: "Hi", store: false })).body?.cancel();
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  for (let i = 0; i < 2; i++) {
    socket.send(create());
    await socket.until("response.completed");
  }
  await waitFor(() => gw.exchanges.filter((e) => e.transport === "websocket").length === 2 || undefined);
  const res = await fetch(`${gw.url}/metrics`);
  const page = parsePrometheusText(await res.text());
  assert.equal(sampleValue(page, "modelgate_responses_sockets_open", {}), 1);
  assert.equal(sampleValue(page, "modelgate_responses_total", { transport: "websocket" }), 2);
  assert.equal(sampleValue(page, "modelgate_responses_total", { transport: "http" }), 1);
});

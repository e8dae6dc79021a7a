/**
 * @module The limits of a Responses WebSocket over real sockets: bad messages answered with an error event naming the
 * field, streams one response at a time each, pending responses, idle time and age, sockets per token, a client that
 * leaves mid-response, a limited token, the drain on stop, and the metrics.
 */
import assert from "node:assert/strict";
import { controlledStream, type FakeUpstream, fakeUpstream, sseReply } from "../_fake_upstream.ts";
import { fixture, startGateway, waitFor } from "../_helpers.ts";
import { create, openSocket, rawHandshake } from "../_socket.ts";

const MESSAGES_PATH = "POST /anth/v1/messages";

/** The text of the first user message the upstream got. */
function asked(body: Record<string, unknown> | undefined): string {
  const first = (body?.messages as { content: unknown }[])[0].content;
  return typeof first === "string" ? first : (first as { text: string }[])[0].text;
}

/** The upstream holds the response to an input of "held" until the test sends it; any other is answered at once. */
function holdOne(upstream: FakeUpstream): ReturnType<typeof controlledStream> & Disposable {
  const held = controlledStream();
  upstream.routes.set(
    MESSAGES_PATH,
    (seen) => asked(seen.body) === "held" ? held.response : sseReply(fixture("anthropic/text.sse")),
  );
  return { ...held, [Symbol.dispose]: () => held.end() };
}

Deno.test("bad messages get an error event naming what is wrong, and the socket stays open", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url, { maxBodyBytes: 4096 });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  const cases: Array<[unknown, number, string | null, string | null]> = [
    ["{not json", 400, "invalid_json", null],
    [{ type: "response.cancel" }, 400, null, "type"],
    [{ model: "claude-test" }, 400, null, "type"],
    [{ type: "response.create", input: "Hi" }, 400, null, "model"],
    [create({ model: "gpt-unknown" }), 404, null, "model"],
    [create({ background: true }), 400, null, "background"],
  ];
  for (const [message, status, code, param] of cases) {
    socket.send(message);
    const event = await socket.next();
    const error = event.error as Record<string, unknown>;
    assert.equal(event.type, "error");
    assert.equal(event.status, status, JSON.stringify(message).slice(0, 60));
    if (code) assert.equal(error.code, code);
    assert.equal(error.param, param, JSON.stringify(message).slice(0, 60));
    assert.equal(typeof error.message, "string");
  }
  socket.ws.send(new Uint8Array([1, 2, 3]));
  assert.equal(((await socket.next()).error as Record<string, unknown>).code, "invalid_message");
  assert.equal(upstream.requests.length, 0);
  // Just under the limit in UTF-8 bytes, in characters of three bytes each: taken.
  socket.send(create({ input: "日".repeat(1300) }));
  assert.equal((await socket.until("response.completed")).at(-1)!.type, "response.completed");
  assert.ok(!gw.exchanges.some((e) => e.status >= 500), "no 5xx");
});

Deno.test("a message over max_body_bytes, counted in UTF-8 bytes, gets a 413 event and closes the socket (1009)", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { maxBodyBytes: 4096 });
  const cases = [
    create({ input: "x".repeat(5000) }),
    // Refused for its size before it is parsed: an oversized message is never read as JSON.
    `{${"x".repeat(5000)}`,
    // 1,400 characters, 4,200 bytes: over the limit only when counted as the bytes it is sent as.
    create({ input: "日".repeat(1400) }),
  ];
  for (const message of cases) {
    await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
    socket.send(message);
    const event = await socket.next();
    assert.deepEqual([event.type, event.status, (event.error as { code: string }).code], [
      "error",
      413,
      "request_too_large",
    ]);
    assert.deepEqual(await socket.closed, { code: 1009, reason: "message too big" });
  }
  assert.equal(upstream.requests.length, 0);
});

Deno.test("responses of one stream_id run in order, other streams alongside; too many pending is refused", async () => {
  await using upstream = fakeUpstream();
  // Should the test fail with the stream still held, the fake upstream can still shut down.
  using held = holdOne(upstream);
  await using gw = await startGateway(upstream.url, { extraYaml: "responses_socket: { max_pending: 3 }" });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create({ input: "held", stream_id: "x" }));
  socket.send(create({ input: "after held", stream_id: "x" }));
  socket.send(create({ input: "other stream", stream_id: "y" }));
  socket.send(create({ input: "one too many", stream_id: "z" }));
  const refused = await socket.next();
  assert.deepEqual([refused.type, refused.stream_id, (refused.error as { code: string }).code], [
    "error",
    "z",
    "too_many_pending_responses",
  ]);
  const other = await socket.until("response.completed");
  assert.ok(other.every((e) => e.stream_id === "y"), "only stream y has run to its end");
  assert.deepEqual(upstream.requests.map((r) => asked(r.body)).sort(), ["held", "other stream"]);
  held.send(fixture("anthropic/text.sse"));
  held.end();
  const rest = await socket.until("response.completed");
  assert.ok(rest.every((e) => e.stream_id === "x"));
  const next = await socket.until("response.completed");
  assert.equal(next[0].type, "response.created");
  assert.equal(asked(upstream.requests[2].body), "after held", "the second of stream x waited for the first");
});

Deno.test("an idle socket, and one past its age, get an error event with the code, then a close", async () => {
  await using upstream = fakeUpstream();
  const cases = [
    { yaml: "responses_socket: { idle_timeout_ms: 100 }", code: "websocket_idle_timeout", reason: "idle timeout" },
    { yaml: "responses_socket: { max_age_ms: 100 }", code: "websocket_connection_limit_reached", reason: "age limit" },
  ];
  for (const c of cases) {
    await using gw = await startGateway(upstream.url, { extraYaml: c.yaml });
    await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
    assert.equal(((await socket.next()).error as { code: string }).code, c.code);
    assert.deepEqual(await socket.closed, { code: 1000, reason: c.reason });
    const line = await waitFor(() => gw.logs.find((l) => l.event === "socket_closed"));
    assert.deepEqual([line.code, line.reason, line.responses], [1000, c.reason, 0]);
    assert.equal(typeof line.token_id, "string");
  }
});

Deno.test("a socket's idle time does not run out while a response runs, even after another one ended", async () => {
  await using upstream = fakeUpstream();
  // Should the test fail with the stream still held, the fake upstream can still shut down.
  using held = holdOne(upstream);
  await using gw = await startGateway(upstream.url, { extraYaml: "responses_socket: { idle_timeout_ms: 100 }" });
  const headers = { authorization: `Bearer ${gw.tokens.default}` };
  await using socket = await openSocket(gw.url, headers);
  socket.send(create({ input: "held", stream_id: "x" }));
  await waitFor(() => upstream.requests[0]);
  // A response of another stream ends while the first still runs: the socket is not idle for it.
  socket.send(create({ input: "quick", stream_id: "y" }));
  assert.ok((await socket.until("response.completed")).every((e) => e.stream_id === "y"));
  // A socket opened now, sending nothing, times out after the idle time; the first response has run longer.
  await using idler = await openSocket(gw.url, headers);
  assert.equal(((await idler.next()).error as { code: string }).code, "websocket_idle_timeout");
  held.send(fixture("anthropic/text.sse"));
  held.end();
  const rest = await socket.until("response.completed", "error");
  assert.equal(rest.at(-1)!.type, "response.completed", JSON.stringify(rest.at(-1)));
  assert.ok(rest.every((e) => e.stream_id === "x"));
});

Deno.test("a token gets a 429 for a socket past max_per_token, before the upgrade", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { extraYaml: "responses_socket: { max_per_token: 1 }" });
  const headers = { "x-api-key": gw.tokens.default };
  {
    await using _first = await openSocket(gw.url, headers);
    const refused = await rawHandshake(gw.url, headers);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(JSON.parse(refused.body).error.code, "too_many_websockets");
    // Another token is not counted with this one.
    assert.equal((await rawHandshake(gw.url, { "x-api-key": gw.tokens.oa })).status, 101);
  }
  await waitFor(() => gw.deps.sockets.count() === 0 || undefined);
  assert.equal((await rawHandshake(gw.url, headers)).status, 101);
});

Deno.test("with responses_socket.enabled false, the upgrade is the 405 of any GET /v1/responses", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { extraYaml: "responses_socket: { enabled: false }" });
  const refused = await rawHandshake(gw.url, { "x-api-key": gw.tokens.default });
  assert.equal(refused.status, 405);
  assert.match(JSON.parse(refused.body).error.message, /Method GET is not allowed/);
  const plain = await fetch(`${gw.url}/v1/responses`, { headers: { "x-api-key": gw.tokens.default } });
  assert.equal(plain.status, 405);
  await plain.body?.cancel();
});

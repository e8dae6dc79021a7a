/**
 * @module Request bodies over real sockets: a body that stops arriving gets a 408 in the client's protocol, a
 * byte-order mark never reaches the upstream, the in-flight budget turns a large body away (or lets it wait), and
 * malformed request heads get the runtime's own 400 while a content-length past the limit gets the gateway's 413.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway, waitFor } from "../_helpers.ts";
import { head, rawExchange } from "../_raw_http.ts";

for (const c of [{ path: "/v1/messages", anthropic: true }, { path: "/v1/chat/completions", anthropic: false }]) {
  Deno.test(`a body that stops arriving gets a 408 in ${c.path}'s protocol, and the request is over`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url, { extraYaml: "body_idle_timeout_ms: 100" });
    const stalled = head(c.path, { "x-api-key": gw.tokens.default, "content-length": "500" }) + '{"model":';
    const { head: status, body } = await rawExchange(gw.url, stalled);
    assert.match(status, /^HTTP\/1.1 408/);
    assert.match(status, /connection: close/i);
    const error = JSON.parse(body);
    if (c.anthropic) assert.deepEqual([error.type, error.error.type], ["error", "timeout_error"]);
    else assert.deepEqual([error.error.type, error.error.code], ["invalid_request_error", "request_timeout"]);
    assert.match(c.anthropic ? error.error.message : error.error.message, /stopped arriving/);
    const exchange = await waitFor(() => gw.exchanges[0]);
    assert.deepEqual([exchange.status, exchange.error], [408, "request_timeout"]);
    assert.equal(upstream.requests.length, 0);
    assert.equal(gw.deps.bodyBudget.inFlight(), 0, "the stalled body's share of the budget is given back");
    assert.ok(!gw.logs.some((line) => line.event === "internal_error"));
  });
}

Deno.test("a body that starts with a UTF-8 byte-order mark reaches the upstream without it", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const json = new TextEncoder().encode(JSON.stringify(messagesBody()));
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": gw.tokens.default },
    body: new Uint8Array([0xef, 0xbb, 0xbf, ...json]),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
  assert.equal(upstream.requests[0].raw, new TextDecoder().decode(json));
});

/** A Messages body of about `size` bytes. */
function largeBody(size: number): string {
  return JSON.stringify(messagesBody({ messages: [{ role: "user", content: "x".repeat(size) }] }));
}

Deno.test("the in-flight budget turns a large body away with a 503 and retry-after while others hold it", async () => {
  await using upstream = fakeUpstream();
  const held: (() => void)[] = [];
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => new Promise((resolve) => held.push(() => resolve(jsonReply(anthropicMessage())))),
  );
  // A wait for room ends at once: the test sees the 503 without spending the wait.
  await using gw = await startGateway(upstream.url, {
    // Room for ten bodies of about 100 kB, not eleven.
    extraYaml: "max_inflight_body_bytes: 1050000",
    sleep: () => Promise.resolve(true),
  });
  const send = () => gw.post("/v1/messages", largeBody(100_000));
  const first = Array.from({ length: 10 }, send);
  // Whatever fails below, the held answers go out, so the gateway can shut down.
  using _release = { [Symbol.dispose]: () => held.forEach((release) => release()) };
  await waitFor(() => held.length === 10 || undefined);
  const eleventh = await send();
  assert.equal(eleventh.status, 503);
  assert.equal(eleventh.headers.get("retry-after"), "1");
  const error = await eleventh.json();
  assert.deepEqual([error.type, error.error.type], ["error", "api_error"]);
  assert.match(error.error.message, /too many large requests/);
  const chat = await gw.post("/v1/chat/completions", {
    model: "gpt-test",
    messages: [{ role: "user", content: "x".repeat(100_000) }],
  }, {
    "x-api-key": gw.tokens.oa,
  });
  assert.equal(chat.status, 503);
  assert.equal((await chat.json()).error.code, "service_unavailable");
  const small = gw.post("/v1/messages", messagesBody());
  await waitFor(() => held.length === 11 || undefined);
  for (const release of held) release();
  for (const res of [...await Promise.all(first), await small]) {
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  await waitFor(() => gw.deps.bodyBudget.inFlight() === 0 || undefined);
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const after = await send();
  assert.equal(after.status, 200, "the budget is given back when the requests are over");
  await after.body?.cancel();
});

Deno.test("a large body that does not fit waits for room and goes on when another request ends", async () => {
  await using upstream = fakeUpstream();
  const held: (() => void)[] = [];
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => new Promise((resolve) => held.push(() => resolve(jsonReply(anthropicMessage())))),
  );
  // The wait for room never runs out by itself: only a request that ends wakes it.
  let waits = 0;
  const sleep = (_ms: number, signal: AbortSignal) => {
    waits++;
    return new Promise<boolean>((resolve) => signal.addEventListener("abort", () => resolve(false), { once: true }));
  };
  await using gw = await startGateway(upstream.url, { extraYaml: "max_inflight_body_bytes: 250000", sleep });
  const send = () => gw.post("/v1/messages", largeBody(100_000));
  const first = [send(), send()];
  using _release = { [Symbol.dispose]: () => held.forEach((release) => release()) };
  await waitFor(() => held.length === 2 || undefined);
  const third = send();
  await waitFor(() => waits > 0 || undefined);
  assert.equal(upstream.requests.length, 2, "the third body waits while two fill the budget");
  held[0]();
  await waitFor(() => held.length === 3 || undefined);
  held[1]();
  held[2]();
  for (const res of [...await Promise.all(first), await third]) {
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
});

Deno.test("malformed request heads get the runtime's bare 400; a content-length past the limit the gateway's 413", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const auth = { "x-api-key": gw.tokens.default };
  const runtime400 = [
    head("/v1/messages", { ...auth, "x-big": "a".repeat(70 * 1024), "content-length": "2" }) + "{}",
    head("/v1/messages", {
      ...auth,
      ...Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`x-h${i}`, "v"])),
      "content-length": "2",
    }) + "{}",
    head("/v1/messages", { ...auth, "content-length": "-5" }) + "{}",
    head("/v1/messages", { ...auth, "content-length": "99999999999999999999999" }) + "{}",
  ];
  for (const request of runtime400) {
    const { head: status } = await rawExchange(gw.url, request);
    assert.match(status, /^HTTP\/1.1 400/);
    assert.match(status, /content-length: 0/);
  }
  assert.equal(gw.exchanges.length, 0, "none of them reached the gateway");
  const { head: status, body } = await rawExchange(
    gw.url,
    head("/v1/messages", { ...auth, "content-length": "9999999999999" }) + "{}",
  );
  assert.match(status, /^HTTP\/1.1 413/);
  const error = JSON.parse(body);
  assert.deepEqual([error.type, error.error.type], ["error", "request_too_large"]);
  assert.equal(upstream.requests.length, 0);
});

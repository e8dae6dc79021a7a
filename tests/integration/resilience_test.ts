/**
 * @module The breaker and the stream's end under the faults real upstreams and clients produce: probes that end
 * without an answer, streams that fail after starting or at once, 429s, client errors without JSON, and upstreams
 * that keep their connection open after the last event.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, firstThen, hang, jsonReply, sseReply } from "../_fake_upstream.ts";
import {
  anthropicMessage,
  bodyReader,
  firstEvent,
  fixture,
  messagesBody,
  readSse,
  readText,
  startGateway,
  waitFor,
  within,
} from "../_helpers.ts";

const ANTHROPIC_SSE = fixture("anthropic_text.sse");
const FIRST = firstEvent(ANTHROPIC_SSE);
const OVERLOADED =
  'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';

/** A clock the test moves by hand, for breaker cooldowns. */
function manualClock() {
  let at = Date.parse("2026-11-22T12:00:00Z");
  return { now: () => new Date(at), advance: (ms: number) => void (at += ms) };
}

Deno.test("a probe whose client leaves frees the deployment for the next request's probe", async () => {
  await using upstream = fakeUpstream();
  let call = 0;
  upstream.routes.set("POST /ha1/v1/messages", (seen) => {
    call++;
    if (call === 1) return jsonReply({ type: "error", error: { type: "api_error", message: "x" } }, 500);
    return call === 2 ? hang(seen) : jsonReply(anthropicMessage("back"));
  });
  upstream.routes.set("POST /ha2/v1/messages", () => jsonReply(anthropicMessage("from ha2")));
  const clock = manualClock();
  await using gw = await startGateway(upstream.url, { failureThreshold: 1, now: clock.now });
  const body = messagesBody({ model: "claude-ha" });
  await (await gw.post("/v1/messages", body)).body?.cancel();
  clock.advance(60_000);
  const controller = new AbortController();
  const probe = fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": gw.tokens.default, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const probeSeen = await waitFor(() => upstream.requests.filter((r) => r.path === "/ha1/v1/messages")[1]);
  controller.abort();
  await assert.rejects(probe);
  await within(probeSeen.closed, 2000, "the upstream request closing");
  const res = await gw.post("/v1/messages", body);
  assert.equal(res.status, 200);
  assert.equal((await res.json()).content[0].text, "back", "the deployment is not left half-open for good");
});

Deno.test("an upstream whose streams keep failing after they start cools down", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /ha1/v1/messages", () => sseReply(FIRST + OVERLOADED));
  upstream.routes.set("POST /ha2/v1/messages", () => sseReply(ANTHROPIC_SSE));
  await using gw = await startGateway(upstream.url, { failureThreshold: 2 });
  for (let i = 0; i < 4; i++) {
    await readText(await gw.post("/v1/messages", messagesBody({ model: "claude-ha", stream: true })));
  }
  assert.equal(upstream.requests.filter((r) => r.path === "/ha1/v1/messages").length, 2);
  assert.equal(upstream.requests.filter((r) => r.path === "/ha2/v1/messages").length, 2);
});

Deno.test("an error as a stream's first event fails over, and is an HTTP error when nothing is left", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /ha1/v1/messages", () => sseReply(OVERLOADED));
  upstream.routes.set("POST /ha2/v1/messages", () => sseReply(ANTHROPIC_SSE));
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(OVERLOADED));
  await using gw = await startGateway(upstream.url);
  const failedOver = await gw.post("/v1/messages", messagesBody({ model: "claude-ha", stream: true }));
  assert.equal(await readText(failedOver), ANTHROPIC_SSE);
  assert.deepEqual(gw.exchanges.at(-1)!.attempts.map((a) => a.outcome), ["overloaded", "ok"]);
  const alone = await gw.post("/v1/messages", messagesBody({ stream: true }));
  assert.equal(alone.status, 529);
  assert.deepEqual((await alone.json()).error, { type: "overloaded_error", message: "Overloaded" });
});

Deno.test("a 429 is not re-sent to the same deployment at once, and the next request still reaches it", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /anth/v1/messages",
    firstThen(
      () => jsonReply({ type: "error", error: { type: "rate_limit_error", message: "Slow down" } }, 429),
      () => jsonReply(anthropicMessage()),
    ),
  );
  await using gw = await startGateway(upstream.url, { failureThreshold: 1 });
  const limited = await gw.post("/v1/messages", messagesBody());
  assert.equal(limited.status, 429);
  await limited.body?.cancel();
  assert.equal(upstream.requests.length, 1);
  const next = await gw.post("/v1/messages", messagesBody());
  assert.equal(next.status, 200, "a single deployment is never refused by its own breaker");
  await next.body?.cancel();
});

Deno.test("an upstream 4xx without a JSON body keeps its status and is not failed over", async () => {
  await using upstream = fakeUpstream();
  const page = () =>
    new Response("<html>Bad Request</html>", { status: 400, headers: { "content-type": "text/html" } });
  upstream.routes.set("POST /ha1/v1/messages", page);
  upstream.routes.set("POST /ha2/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody({ model: "claude-ha" }));
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.error.type, "invalid_request_error");
  assert.ok(!JSON.stringify(body).includes("<html>"));
  assert.equal(upstream.requests.length, 1);
});

const HELD_OPEN = [
  {
    name: "a Messages passthrough",
    route: "POST /anth/v1/messages",
    path: "/v1/messages",
    body: messagesBody({ stream: true }),
    upstreamText: ANTHROPIC_SSE,
    last: "message_stop",
  },
  {
    name: "a Messages stream translated from chat",
    route: "POST /oai/v1/chat/completions",
    path: "/v1/messages",
    body: messagesBody({ model: "gpt-test", stream: true }),
    upstreamText: fixture("openai_chat_text.sse"),
    last: "message_stop",
  },
];

for (const c of HELD_OPEN) {
  Deno.test(`${c.name} ends at the upstream's last event even if its connection stays open`, async () => {
    await using upstream = fakeUpstream();
    const held = controlledStream();
    upstream.routes.set(c.route, () => held.response);
    await using gw = await startGateway(upstream.url, { idleTimeoutMs: 60_000 });
    held.send(c.upstreamText);
    const events = await readSse(await gw.post(c.path, c.body));
    assert.equal(events.at(-1)!.event, c.last);
    assert.ok(!events.some((e) => e.event === "error"));
    await within(upstream.requests[0].closed, 2000, "the upstream request closing");
  });
}

Deno.test("a passthrough chat stream gets keep-alive comments between events while the upstream is silent", async () => {
  await using upstream = fakeUpstream();
  const held = controlledStream();
  upstream.routes.set("POST /oai/v1/chat/completions", () => held.response);
  await using gw = await startGateway(upstream.url, { extraYaml: "stream_keepalive_ms: 20\n" });
  const first = firstEvent(fixture("openai_chat_text.sse"));
  held.send(first);
  const res = await gw.post("/v1/chat/completions", {
    model: "gpt-test",
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "Hi" }],
  }, { "x-api-key": gw.tokens.oa });
  await using body = bodyReader(res);
  assert.equal(await body.next(), first);
  assert.equal(await body.next(), ": keep-alive\n\n");
  await body.cancel();
  await within(upstream.requests[0].closed, 2000, "the upstream request closing");
});

Deno.test("thinking without a signature is kept from an Anthropic upstream; signed thinking passes", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const history = (signature: string) => [
    { role: "user", content: "Hi" },
    { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature }, { type: "text", text: "Hello" }] },
    { role: "user", content: "More" },
  ];
  await (await gw.post("/v1/messages", messagesBody({ messages: history("") }))).body?.cancel();
  await (await gw.post("/v1/messages", messagesBody({ messages: history("sig-abc") }))).body?.cancel();
  const [unsigned, signed] = upstream.requests.map((r) => r.body?.messages as { content: unknown }[]);
  assert.deepEqual(unsigned[1].content, [{ type: "text", text: "Hello" }]);
  assert.deepEqual(signed[1].content, history("sig-abc")[1].content);
});

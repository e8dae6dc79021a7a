/**
 * @module Failover across two upstreams of one model, in both protocols, streamed and not: faults before the first
 * byte move to the next upstream; faults after it, and client errors, do not.
 */
import assert from "node:assert/strict";
import {
  chatCompletion,
  controlledStream,
  fakeUpstream,
  firstThen,
  hang,
  jsonReply,
  resetServer,
  type Responder,
  sseReply,
} from "../_fake_upstream.ts";
import {
  anthropicMessage,
  bodyReader,
  firstEvent,
  fixture,
  messagesBody,
  readSse,
  readText,
  startGateway,
  within,
} from "../_helpers.ts";

const ANTHROPIC_SSE = fixture("anthropic_text.sse");
const CHAT_SSE = fixture("openai_chat_text.sse");

/** One protocol's way to call the gateway and to answer from the second upstream. */
const PROTOCOLS = [
  {
    name: "Messages",
    path: "/v1/messages",
    primary: "/ha1/v1/messages",
    secondary: "/ha2/v1/messages",
    body: (stream: boolean) => messagesBody({ model: "claude-ha", stream }),
    token: "default" as const,
    reply: (stream: boolean) => stream ? sseReply(ANTHROPIC_SSE) : jsonReply(anthropicMessage("from ha2")),
    // As Anthropic's API sends it, with its own request id, which the client gets unchanged.
    errorBody: {
      type: "error",
      error: { type: "invalid_request_error", message: "bad field" },
      request_id: "req_up_1",
    },
  },
  {
    name: "Chat Completions",
    path: "/v1/chat/completions",
    primary: "/hb1/v1/chat/completions",
    secondary: "/hb2/v1/chat/completions",
    // Asking for usage keeps the stream byte for byte (otherwise the gateway asks for it and hides the extra chunk).
    body: (stream: boolean) => ({
      model: "gpt-ha",
      stream,
      ...stream ? { stream_options: { include_usage: true } } : {},
      messages: [{ role: "user", content: "Hi" }],
    }),
    token: "oa" as const,
    reply: (stream: boolean) => stream ? sseReply(CHAT_SSE) : jsonReply(chatCompletion("from ha2")),
    errorBody: { error: { message: "bad field", type: "invalid_request_error", param: "x", code: null } },
  },
];

const FAILOVER_FAULTS: { name: string; responder?: Responder; reset?: boolean; outcome: string }[] = [
  { name: "500", responder: () => jsonReply({ error: { message: "boom" } }, 500), outcome: "upstream" },
  {
    name: "529 with retry-after",
    responder: () => jsonReply({ error: { message: "overloaded" } }, 529, { "retry-after": "1" }),
    outcome: "overloaded",
  },
  { name: "429", responder: () => jsonReply({ error: { message: "slow down" } }, 429), outcome: "rate_limit" },
  { name: "408", responder: () => jsonReply({ error: { message: "request timed out" } }, 408), outcome: "timeout" },
  { name: "401", responder: () => jsonReply({ error: { message: "bad key" } }, 401), outcome: "upstream" },
  { name: "a 200 with garbage", responder: () => new Response("<html>", { status: 200 }), outcome: "upstream" },
  { name: "a hang", responder: hang, outcome: "timeout" },
  { name: "a reset before headers", reset: true, outcome: "upstream" },
];

for (const protocol of PROTOCOLS) {
  for (const stream of [false, true]) {
    for (const fault of FAILOVER_FAULTS) {
      Deno.test(`${protocol.name}${stream ? " stream" : ""}: ${fault.name} from the first upstream fails over`, async () => {
        await using upstream = fakeUpstream();
        await using reset = resetServer();
        if (fault.responder) upstream.routes.set(`POST ${protocol.primary}`, fault.responder);
        upstream.routes.set(`POST ${protocol.secondary}`, () => protocol.reply(stream));
        await using gw = await startGateway(upstream.url, {
          timeoutMs: 200,
          ha1Url: fault.reset ? reset.url : undefined,
        });
        const res = await gw.post(protocol.path, protocol.body(stream), {
          "x-api-key": "",
          authorization: `Bearer ${gw.tokens[protocol.token]}`,
        });
        assert.equal(res.status, 200);
        const text = await readText(res);
        if (stream) assert.equal(text, protocol.name === "Messages" ? ANTHROPIC_SSE : CHAT_SSE);
        else assert.match(text, /from ha2/);
        assert.equal(
          fault.reset ? reset.accepted() : upstream.requests.filter((r) => r.path === protocol.primary).length,
          1,
        );
        const [first, second] = gw.exchanges.at(-1)!.attempts;
        assert.equal(first.outcome, fault.outcome);
        assert.equal(second.outcome, "ok");
        if (fault.responder === hang) await within(upstream.requests[0].closed, 2000, "the upstream request closing");
      });
    }

    Deno.test(`${protocol.name}${stream ? " stream" : ""}: a 400 from the first upstream is the client's answer`, async () => {
      await using upstream = fakeUpstream();
      upstream.routes.set(`POST ${protocol.primary}`, () => jsonReply(protocol.errorBody, 400));
      upstream.routes.set(`POST ${protocol.secondary}`, () => protocol.reply(stream));
      await using gw = await startGateway(upstream.url);
      const res = await gw.post(protocol.path, protocol.body(stream), {
        "x-api-key": "",
        authorization: `Bearer ${gw.tokens[protocol.token]}`,
      });
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), protocol.errorBody);
      assert.equal(upstream.requests.filter((r) => r.path === protocol.secondary).length, 0);
    });
  }

  Deno.test(`${protocol.name} stream: a cut after the first byte is reported in-band, never spliced`, async () => {
    await using upstream = fakeUpstream();
    const cut = controlledStream();
    upstream.routes.set(`POST ${protocol.primary}`, () => cut.response);
    upstream.routes.set(`POST ${protocol.secondary}`, () => protocol.reply(true));
    await using gw = await startGateway(upstream.url);
    const pending = gw.post(protocol.path, protocol.body(true), {
      "x-api-key": "",
      authorization: `Bearer ${gw.tokens[protocol.token]}`,
    });
    const whole = protocol.name === "Messages" ? ANTHROPIC_SSE : CHAT_SSE;
    const first = firstEvent(whole);
    cut.send(first);
    await using body = bodyReader(await pending);
    let text = await body.next() ?? "";
    cut.cut();
    text += await body.rest();
    assert.ok(text.startsWith(first));
    const last = text.trimEnd().split("\n\n").at(-1)!;
    if (protocol.name === "Messages") {
      assert.match(last, /^event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    } else assert.match(last, /^data: \{"error":\{"message":/);
    assert.ok(!text.includes("[DONE]") && !text.includes("message_stop"));
    assert.equal(upstream.requests.filter((r) => r.path === protocol.secondary).length, 0);
  });
}

Deno.test("an upstream's own in-stream error event reaches the client once, without failover", async () => {
  await using upstream = fakeUpstream();
  const first = firstEvent(ANTHROPIC_SSE);
  const error = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
  upstream.routes.set("POST /ha1/v1/messages", () => sseReply(first + error));
  upstream.routes.set("POST /ha2/v1/messages", () => sseReply(ANTHROPIC_SSE));
  await using gw = await startGateway(upstream.url);
  const events = await readSse(await gw.post("/v1/messages", messagesBody({ model: "claude-ha", stream: true })));
  assert.deepEqual(events.map((e) => e.event), ["message_start", "error"]);
  assert.equal(JSON.parse(events[1].data).error.type, "overloaded_error");
  assert.equal(upstream.requests.length, 1);
});

Deno.test("a single upstream is retried up to max_attempts and its last error returned", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => jsonReply({ type: "error", error: { type: "api_error", message: "x" } }, 500),
  );
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 500);
  assert.equal((await res.json()).error.type, "api_error");
  assert.equal(upstream.requests.length, 3);
});

Deno.test("an upstream's short retry-after is waited out and the retry succeeds", async () => {
  await using upstream = fakeUpstream();
  const busy = { type: "error", error: { type: "overloaded_error", message: "busy" } };
  upstream.routes.set(
    "POST /anth/v1/messages",
    firstThen(
      () => jsonReply(busy, 529, { "retry-after-ms": "30" }),
      () => jsonReply(anthropicMessage("second try")),
    ),
  );
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 200);
  assert.equal((await res.json()).content[0].text, "second try");
  assert.deepEqual(gw.exchanges.at(-1)!.attempts.map((a) => a.outcome), ["overloaded", "ok"]);
});

Deno.test("a retry-after longer than the deadline is passed to the client instead of waited", async () => {
  await using upstream = fakeUpstream();
  const body = { type: "error", error: { type: "rate_limit_error", message: "Slow down" } };
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(body, 429, { "retry-after": "60" }));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "60");
  assert.deepEqual(await res.json(), { ...body, request_id: res.headers.get("request-id") });
  assert.equal(upstream.requests.length, 1);
});

for (const header of ["retry-after-ms", "retry-after"]) {
  Deno.test(`a 429 with an empty ${header} is not re-sent to the same deployment, nor the header relayed`, async () => {
    await using upstream = fakeUpstream();
    const body = { type: "error", error: { type: "rate_limit_error", message: "Slow down" } };
    upstream.routes.set("POST /anth/v1/messages", () => jsonReply(body, 429, { [header]: "" }));
    await using gw = await startGateway(upstream.url);
    const res = await gw.post("/v1/messages", messagesBody());
    assert.equal(res.status, 429);
    assert.deepEqual(await res.json(), { ...body, request_id: res.headers.get("request-id") });
    assert.equal(upstream.requests.length, 1);
    assert.equal(res.headers.get(header), null);
  });
}

Deno.test("an upstream that keeps failing is skipped while it cools down", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /ha1/v1/messages", () => jsonReply({ error: { message: "boom" } }, 500));
  upstream.routes.set("POST /ha2/v1/messages", () => jsonReply(anthropicMessage("from ha2")));
  await using gw = await startGateway(upstream.url, { failureThreshold: 2 });
  for (let i = 0; i < 4; i++) {
    const res = await gw.post("/v1/messages", messagesBody({ model: "claude-ha" }));
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  assert.equal(upstream.requests.filter((r) => r.path === "/ha1/v1/messages").length, 2);
  assert.deepEqual(gw.exchanges.at(-1)!.attempts.map((a) => a.upstream), ["ha2"]);
});

/**
 * @module The gateway's own retries over real HTTP: a retry-after is waited out once and only when the client can
 * afford it, never turned into a cooldown; retries to one deployment stay within the retry budget while failover is
 * free; one failing request never trips a breaker however often it was retried; and a 429 or 529 without a retry time
 * is never re-sent to the deployment that gave it.
 */
import assert from "node:assert/strict";
import { fakeUpstream, firstThen, jsonReply, sseReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

/** A clock that moves only when the gateway waits, and the waits it was asked for. */
function pausedTime() {
  let at = Date.parse("2026-11-22T12:00:00Z");
  const waits: number[] = [];
  return {
    waits,
    now: () => new Date(at),
    sleep(ms: number, signal: AbortSignal) {
      waits.push(ms);
      at += ms;
      return Promise.resolve(!signal.aborted);
    },
  };
}

const LIMITED = [
  { status: 429, error: { type: "rate_limit_error", message: "Slow down" } },
  { status: 529, error: { type: "overloaded_error", message: "Overloaded" } },
];

for (const c of LIMITED) {
  Deno.test(`a ${c.status} with retry-after: 1 is waited out once, then the retry's answer goes to the client`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set(
      "POST /anth/v1/messages",
      firstThen(
        () => jsonReply({ type: "error", error: c.error }, c.status, { "retry-after": "1" }),
        () => jsonReply(anthropicMessage("after the pause")),
      ),
    );
    const time = pausedTime();
    await using gw = await startGateway(upstream.url, { now: time.now, sleep: time.sleep });
    const res = await gw.post("/v1/messages", messagesBody());
    assert.equal(res.status, 200);
    assert.equal((await res.json()).content[0].text, "after the pause");
    assert.deepEqual(time.waits, [1000]);
    assert.equal(gw.exchanges.at(-1)!.duration_ms, 1000, "the answer came after the pause plus the upstream's time");
  });

  Deno.test(`a ${c.status} with retry-after: 1 on every try never holds a client longer than the pause`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set(
      "POST /anth/v1/messages",
      () => jsonReply({ type: "error", error: c.error }, c.status, { "retry-after": "1" }),
    );
    const time = pausedTime();
    await using gw = await startGateway(upstream.url, { now: time.now, sleep: time.sleep });
    for (let i = 0; i < 6; i++) {
      const res = await gw.post("/v1/messages", messagesBody());
      assert.equal(res.status, c.status);
      assert.equal(res.headers.get("retry-after"), "1");
      assert.deepEqual((await res.json()).error, c.error);
      assert.ok(gw.exchanges.at(-1)!.duration_ms! <= 1000, `request ${i} took ${gw.exchanges.at(-1)!.duration_ms} ms`);
    }
    assert.ok(time.waits.every((ms) => ms === 1000), `waits: ${time.waits}`);
    const health = await (await fetch(`${gw.url}/healthz`)).json();
    assert.equal(health.upstreams.anth.models["claude-test"].state, "cooling_down", "the breaker tripped meanwhile");
  });
}

Deno.test("a retry-after the client's own timeout cannot afford is passed to it with the upstream's status", async () => {
  await using upstream = fakeUpstream();
  const body = { type: "error", error: { type: "rate_limit_error", message: "Slow down" } };
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(body, 429, { "retry-after": "3" }));
  const time = pausedTime();
  await using gw = await startGateway(upstream.url, { now: time.now, sleep: time.sleep, failureThreshold: 10 });
  // The official SDKs send their timeout in seconds.
  const hurried = await gw.post("/v1/messages", messagesBody(), { "x-stainless-timeout": "2" });
  assert.equal(hurried.status, 429);
  assert.equal(hurried.headers.get("retry-after"), "3");
  assert.deepEqual(await hurried.json(), { ...body, request_id: hurried.headers.get("request-id") });
  assert.deepEqual([time.waits, upstream.requests.length], [[], 1]);
  const patient = await gw.post("/v1/messages", messagesBody(), { "x-stainless-timeout": "600" });
  assert.equal(patient.status, 429);
  await patient.body?.cancel();
  assert.deepEqual(time.waits, [3000], "a client that can wait has the pause waited out for it");
});

Deno.test("one failing request never trips a breaker, however often the gateway retried it", async () => {
  await using upstream = fakeUpstream();
  let calls = 0;
  upstream.routes.set("POST /anth/v1/messages", () => {
    calls++;
    return jsonReply({ type: "error", error: { type: "api_error", message: "x" } }, 500);
  });
  await using gw = await startGateway(upstream.url, { failureThreshold: 2 });
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 500);
  await res.body?.cancel();
  assert.equal(calls, 3, "the request was retried");
  const health = await (await fetch(`${gw.url}/healthz`)).json();
  assert.deepEqual(health.upstreams.anth.models["claude-test"], {
    state: "ok",
    cooling_until: null,
    recent_failures: 1,
  });
});

Deno.test("retries to one deployment stay within the retry budget during an incident", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply({ type: "error", error: { type: "api_error" } }, 500));
  await using gw = await startGateway(upstream.url, {
    failureThreshold: 1000,
    routing: "retry_budget: { ratio: 0.2, min_retries: 2 }",
  });
  for (let i = 0; i < 20; i++) await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
  // Without the budget every request would make max_attempts (3) calls: 60.
  assert.ok(upstream.requests.length <= 20 + 2 + 0.2 * 20, `${upstream.requests.length} upstream calls`);
  assert.ok(upstream.requests.length > 20, "some retries were allowed");
});

Deno.test("moving on to another deployment is not limited by the retry budget", async () => {
  await using upstream = fakeUpstream();
  const boom = () => jsonReply({ type: "error", error: { type: "api_error", message: "boom" } }, 500);
  upstream.routes.set("POST /ha1/v1/messages", boom);
  upstream.routes.set("POST /ha2/v1/messages", () => jsonReply(anthropicMessage("from ha2")));
  upstream.routes.set("POST /anth/v1/messages", boom);
  await using gw = await startGateway(upstream.url, {
    failureThreshold: 1000,
    routing: "retry_budget: { ratio: 0, min_retries: 0 }",
  });
  for (let i = 0; i < 5; i++) {
    const res = await gw.post("/v1/messages", messagesBody({ model: "claude-ha" }));
    assert.equal((await res.json()).content[0].text, "from ha2");
    await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
  }
  const calls = (path: string) => upstream.requests.filter((r) => r.path === path).length;
  assert.deepEqual([calls("/ha1/v1/messages"), calls("/ha2/v1/messages"), calls("/anth/v1/messages")], [5, 5, 5]);
});

type Limited = typeof LIMITED[number];

/** The ways an upstream says 429 or 529: a JSON error, a body that is not JSON, an error as a stream's first event. */
const BUSY_SHAPES = [
  {
    name: "a JSON error",
    stream: false,
    reply: (c: Limited) => jsonReply({ type: "error", error: c.error }, c.status),
  },
  {
    name: "a page",
    stream: false,
    reply: (c: Limited) => new Response("<html>busy</html>", { status: c.status }),
  },
  {
    name: "a stream's first event",
    stream: true,
    reply: (c: Limited) => sseReply(`event: error\ndata: ${JSON.stringify({ type: "error", error: c.error })}\n\n`),
  },
];

for (const c of LIMITED) {
  for (const shape of BUSY_SHAPES) {
    Deno.test(`a ${c.status} as ${shape.name} without a retry time is not re-sent to its deployment, at the default threshold`, async () => {
      await using upstream = fakeUpstream();
      upstream.routes.set("POST /anth/v1/messages", () => shape.reply(c));
      // The test config's threshold is the default one (3): the first failure leaves the breaker closed, so only the
      // rule stops a re-send here (a threshold of 1 would trip the breaker and hide a broken rule).
      await using gw = await startGateway(upstream.url);
      assert.equal(gw.deps.config.routing.failure_threshold, 3);
      const res = await gw.post("/v1/messages", messagesBody({ stream: shape.stream }));
      assert.equal(res.status, c.status);
      await res.body?.cancel();
      assert.equal(upstream.requests.length, 1, "the deployment that said it is busy is not asked again at once");
      assert.deepEqual(gw.exchanges.at(-1)!.attempts.map((a) => a.status), [c.status]);
    });
  }
}

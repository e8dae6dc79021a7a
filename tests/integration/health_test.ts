/**
 * @module Health per deployment over real HTTP: one model's failures leave the other models of its upstream alone,
 * connection failures count for the whole upstream, cooldowns reorder but never refuse, and client errors never count.
 */
import assert from "node:assert/strict";
import {
  controlledStream,
  fakeUpstream,
  hang,
  jsonReply,
  resetServer,
  type Responder,
  sseReply,
} from "../_fake_upstream.ts";
import {
  anthropicMessage,
  firstEvent,
  fixture,
  messagesBody,
  readText,
  startGateway,
  type StartOptions,
  within,
} from "../_helpers.ts";

/** An upstream serving a failing and a healthy model, a backup for the healthy one, and a group with both. */
function sharedSetup(url: string, sharedUrl = url): StartOptions {
  return {
    extraUpstreams: `
  - { name: shared, protocol: anthropic, base_url: ${sharedUrl}/shared/v1, api_key_env: TEST_ANTHROPIC_KEY,
      priority: 1, timeout_ms: 300, models: [claude-sick, claude-well] }
  - { name: backup, protocol: anthropic, base_url: ${url}/backup/v1, api_key_env: TEST_ANTHROPIC_KEY,
      models: [claude-well] }`,
    extraGroups: "  - { name: team, listing: anthropic, models: [claude-sick, claude-well] }",
  };
}

/** A responder that fails for claude-sick with `fault` and answers claude-well, streamed or not. */
function byModel(fault: Responder): Responder {
  return (seen, req) => {
    if (seen.body?.model === "claude-sick") return fault(seen, req);
    return seen.body?.stream ? new Response(fixture("anthropic_text.sse"), SSE) : jsonReply(anthropicMessage("well"));
  };
}
const SSE = { headers: { "content-type": "text/event-stream" } };

const error = (type: string) => ({ type: "error", error: { type, message: `failed: ${type}` } });

/**
 * Every way a model can fail on its own, with the status its client sees (200: the stream failed after it began, cut
 * by the test through `held` once the client has the first event).
 */
function modelFaults(
  held: { stream?: ReturnType<typeof controlledStream> },
): { responder: Responder; status: number }[] {
  return [
    { responder: () => jsonReply(error("api_error"), 500), status: 500 },
    { responder: () => jsonReply(error("overloaded_error"), 529), status: 529 },
    { responder: () => jsonReply(error("rate_limit_error"), 429), status: 429 },
    { responder: hang, status: 504 },
    { responder: () => sseReply(`event: error\ndata: ${JSON.stringify(error("overloaded_error"))}\n\n`), status: 529 },
    {
      responder: () => {
        held.stream = controlledStream();
        held.stream.send(firstEvent(fixture("anthropic_text.sse")));
        return held.stream.response;
      },
      status: 200,
    },
  ];
}

Deno.test("model A failing 10 times in a row on an upstream does not change one answer for model B there", async () => {
  await using upstream = fakeUpstream();
  const held: { stream?: ReturnType<typeof controlledStream> } = {};
  const faults = modelFaults(held);
  let fault = faults[0];
  upstream.routes.set("POST /shared/v1/messages", byModel((seen, req) => fault.responder(seen, req)));
  await using gw = await startGateway(upstream.url, sharedSetup(upstream.url));
  const token = (await gw.store.createToken({ group: "team" })).secret;
  for (let i = 0; i < 10; i++) {
    fault = faults[i % faults.length];
    const body = messagesBody({ model: "claude-sick", stream: true });
    const sick = await gw.post("/v1/messages", body, { "x-api-key": token });
    assert.equal(sick.status, fault.status, "the upstream's own status, never a gateway 503");
    held.stream?.cut();
    held.stream = undefined;
    if (sick.status === 200) assert.match(await readText(sick), /event: error/);
    else await sick.body?.cancel();
    const stream = i % 2 === 1;
    const well = await gw.post("/v1/messages", messagesBody({ model: "claude-well", stream }), { "x-api-key": token });
    assert.equal(well.status, 200);
    if (stream) assert.equal(await readText(well), fixture("anthropic_text.sse"));
    else assert.equal((await well.json()).content[0].text, "well");
    assert.equal(gw.exchanges.at(-1)!.upstream, "shared", "the healthy model is still served by its first upstream");
  }
  const health = await (await fetch(`${gw.url}/healthz`)).json();
  assert.equal(health.upstreams.shared.state, "ok");
  assert.equal(health.upstreams.shared.models["claude-sick"].state, "cooling_down");
  assert.equal(health.upstreams.shared.models["claude-sick"].recent_failures, 10);
  assert.deepEqual(health.upstreams.shared.models["claude-well"], {
    state: "ok",
    cooling_until: null,
    recent_failures: 0,
  });
  await Promise.all(upstream.requests.map((r) => within(r.closed, 2000, "every upstream request closing")));
});

Deno.test("a single deployment answering 529 five times gives the client five 529s with the upstream's retry-after", async () => {
  await using upstream = fakeUpstream();
  const overloaded = { type: "error", error: { type: "overloaded_error", message: "Overloaded" } };
  // Longer than the test's 5 s deadline: passed on, not waited out.
  const headers = { "retry-after": "10", "retry-after-ms": "10000" };
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(overloaded, 529, headers));
  await using gw = await startGateway(upstream.url);
  for (let i = 0; i < 5; i++) {
    const res = await gw.post("/v1/messages", messagesBody());
    assert.equal(res.status, 529);
    assert.equal(res.headers.get("retry-after"), "10");
    assert.equal(res.headers.get("retry-after-ms"), "10000");
    assert.deepEqual(await res.json(), { ...overloaded, request_id: res.headers.get("request-id") });
  }
  assert.equal(upstream.requests.length, 5, "every request reached the upstream, cooling down or not");
});

Deno.test("with two deployments a cooling one is skipped, and when both cool the request still reaches one", async () => {
  await using upstream = fakeUpstream();
  let ha2Fails = false;
  const boom = () => jsonReply({ type: "error", error: { type: "api_error", message: "boom" } }, 500);
  upstream.routes.set("POST /ha1/v1/messages", boom);
  upstream.routes.set("POST /ha2/v1/messages", () => ha2Fails ? boom() : jsonReply(anthropicMessage("from ha2")));
  await using gw = await startGateway(upstream.url, { failureThreshold: 1 });
  const calls = (path: string) => upstream.requests.filter((r) => r.path === path).length;
  const ask = async () => {
    const res = await gw.post("/v1/messages", messagesBody({ model: "claude-ha" }));
    return { status: res.status, body: await res.json() };
  };
  assert.equal((await ask()).status, 200, "ha1 failed and ha2 served");
  assert.equal((await ask()).body.content[0].text, "from ha2");
  assert.deepEqual([calls("/ha1/v1/messages"), calls("/ha2/v1/messages")], [1, 2], "cooling ha1 was skipped");
  ha2Fails = true;
  assert.equal((await ask()).status, 500, "the last upstream's own answer, not a gateway 503");
  assert.deepEqual([calls("/ha1/v1/messages"), calls("/ha2/v1/messages")], [1, 3]);
  const both = await ask();
  assert.equal(both.status, 500);
  assert.equal(both.body.error.message, "boom");
  assert.deepEqual(
    [calls("/ha1/v1/messages"), calls("/ha2/v1/messages")],
    [2, 3],
    "both cooling: the request went to the one that cooled first",
  );
});

const UPSTREAM_FAULTS: { name: string; reset?: boolean; responder?: Responder }[] = [
  { name: "a reset before the status line", reset: true },
  { name: "401 on its key", responder: () => jsonReply({ error: { message: "invalid x-api-key" } }, 401) },
];

for (const fault of UPSTREAM_FAULTS) {
  Deno.test(`${fault.name} from one model counts for every model of that upstream`, async () => {
    await using upstream = fakeUpstream();
    await using reset = resetServer();
    if (fault.responder) upstream.routes.set("POST /shared/v1/messages", fault.responder);
    upstream.routes.set("POST /backup/v1/messages", () => jsonReply(anthropicMessage("from backup")));
    await using gw = await startGateway(upstream.url, {
      ...sharedSetup(upstream.url, fault.reset ? reset.url : upstream.url),
      failureThreshold: 2,
    });
    const token = (await gw.store.createToken({ group: "team" })).secret;
    const shared = () =>
      fault.reset ? reset.accepted() : upstream.requests.filter((r) => r.path.startsWith("/shared")).length;
    for (let i = 0; i < 2; i++) {
      const res = await gw.post("/v1/messages", messagesBody({ model: "claude-sick" }), { "x-api-key": token });
      assert.equal(res.status, 502);
      await res.body?.cancel();
    }
    const before = shared();
    const well = await gw.post("/v1/messages", messagesBody({ model: "claude-well" }), { "x-api-key": token });
    assert.equal((await well.json()).content[0].text, "from backup");
    assert.equal(shared(), before, "the healthy model skipped the unreachable upstream at once");
    const health = await (await fetch(`${gw.url}/healthz`)).json();
    assert.equal(health.upstreams.shared.state, "cooling_down");
    assert.equal(health.upstreams.shared.models["claude-sick"].state, "ok", "no model is blamed for it");
  });
}

Deno.test("errors the client caused never count against a deployment", async () => {
  await using upstream = fakeUpstream();
  const statuses = [400, 404, 413, 422];
  let call = 0;
  upstream.routes.set("POST /anth/v1/messages", () => {
    const status = statuses[call++ % statuses.length];
    return jsonReply({ type: "error", error: { type: "invalid_request_error", message: `no ${status}` } }, status);
  });
  await using gw = await startGateway(upstream.url, { failureThreshold: 1 });
  for (let i = 0; i < 8; i++) {
    const res = await gw.post("/v1/messages", messagesBody());
    assert.equal(res.status, statuses[i % statuses.length]);
    await res.body?.cancel();
  }
  assert.equal(upstream.requests.length, 8, "no client error is retried");
  const health = await (await fetch(`${gw.url}/healthz`)).json();
  assert.deepEqual(health.upstreams.anth.models["claude-test"], {
    state: "ok",
    cooling_until: null,
    recent_failures: 0,
  });
});

Deno.test("an overload reaches an OpenAI client as 503 with the upstream's body and retry-after", async () => {
  await using upstream = fakeUpstream();
  const body = { error: { message: "Engine overloaded", type: "server_error", param: null, code: "overloaded" } };
  upstream.routes.set("POST /oai/v1/chat/completions", () => jsonReply(body, 529, { "retry-after": "10" }));
  await using gw = await startGateway(upstream.url);
  const chat = { model: "gpt-test", messages: [{ role: "user", content: "Hi" }] };
  const res = await gw.post("/v1/chat/completions", chat, { "x-api-key": gw.tokens.oa });
  assert.equal(res.status, 503);
  assert.equal(res.headers.get("retry-after"), "10");
  assert.deepEqual(await res.json(), body);
});

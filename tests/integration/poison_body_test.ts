/**
 * @module A client cannot cool a deployment for everyone, over real HTTP: one token whose body makes the provider
 * answer 500, sent 4 at a time and again, leaves another token's traffic where it is, while failures of several
 * tokens, or of one on a deployment that has served nothing well for a cooldown, still cool it.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply, type SeenRequest } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";

const POISON = "a body this model cannot take";

/** Both deployments of claude-ha answer 500 to the poison (or to everything while `down` says so), else well. */
function deployments(upstream: ReturnType<typeof fakeUpstream>, down: { ha1: boolean }): void {
  for (const name of ["ha1", "ha2"] as const) {
    upstream.routes.set(`POST /${name}/v1/messages`, (seen: SeenRequest) => {
      const content = (seen.body?.messages as { content: string }[])[0].content;
      if (content === POISON || (name === "ha1" && down.ha1)) {
        return jsonReply({ type: "error", error: { type: "api_error", message: "Internal server error" } }, 500);
      }
      return jsonReply(anthropicMessage(`from ${name}`));
    });
  }
}

async function ask(gw: TestGateway, secret: string, content: string): Promise<{ status: number; upstreams: string[] }> {
  const body = messagesBody({ model: "claude-ha", messages: [{ role: "user", content }] });
  const res = await gw.post("/v1/messages", body, { "x-api-key": secret });
  await res.body?.cancel();
  const exchange = gw.exchanges.findLast((e) => e.request_id === res.headers.get("request-id"));
  return { status: res.status, upstreams: exchange?.attempts.map((a) => a.upstream) ?? [] };
}

async function ha1State(gw: TestGateway): Promise<string> {
  return (await (await fetch(`${gw.url}/healthz`)).json()).upstreams.ha1.models["claude-ha"].state;
}

/** A clock the test moves. */
function clock(): { now(): Date; advance(ms: number): void } {
  let at = Date.now();
  return { now: () => new Date(at), advance: (ms) => at += ms };
}

Deno.test("one token's poison body, 4 at a time and repeated, leaves another token's traffic on its deployment", async () => {
  await using upstream = fakeUpstream();
  deployments(upstream, { ha1: false });
  const time = clock();
  await using gw = await startGateway(upstream.url, { now: time.now });
  const hostile = (await gw.store.createToken({ group: "default" })).secret;
  const other = (await gw.store.createToken({ group: "default" })).secret;
  assert.deepEqual(await ask(gw, other, "Hi"), { status: 200, upstreams: ["ha1"] });
  for (let round = 0; round < 5; round++) {
    const poisoned = await Promise.all(Array.from({ length: 4 }, () => ask(gw, hostile, POISON)));
    assert.deepEqual(poisoned.map((r) => r.status), [500, 500, 500, 500]);
    assert.equal(await ha1State(gw), "ok", `round ${round}: one token's failures do not cool ha1`);
    const served = await Promise.all([ask(gw, other, "Hi"), ask(gw, other, "Hello")]);
    assert.deepEqual(served, [{ status: 200, upstreams: ["ha1"] }, { status: 200, upstreams: ["ha1"] }]);
    time.advance(1000);
  }
});

Deno.test("failures of three tokens on a deployment that served well still cool it at once", async () => {
  await using upstream = fakeUpstream();
  const down = { ha1: false };
  deployments(upstream, down);
  await using gw = await startGateway(upstream.url, { now: clock().now });
  const tokens = await Promise.all(
    [0, 1, 2].map(async () => (await gw.store.createToken({ group: "default" })).secret),
  );
  assert.deepEqual(await ask(gw, tokens[0], "Hi"), { status: 200, upstreams: ["ha1"] });
  down.ha1 = true;
  for (const token of tokens) assert.deepEqual(await ask(gw, token, "Hi"), { status: 200, upstreams: ["ha1", "ha2"] });
  assert.equal(await ha1State(gw), "cooling_down");
  assert.deepEqual(await ask(gw, tokens[0], "Hi"), { status: 200, upstreams: ["ha2"] });
});

Deno.test("one token's failures cool a deployment that has served nothing well for a cooldown", async () => {
  await using upstream = fakeUpstream();
  const down = { ha1: false };
  deployments(upstream, down);
  const time = clock();
  await using gw = await startGateway(upstream.url, { now: time.now });
  const token = (await gw.store.createToken({ group: "default" })).secret;
  assert.deepEqual(await ask(gw, token, "Hi"), { status: 200, upstreams: ["ha1"] });
  down.ha1 = true;
  for (let i = 0; i < 3; i++) await ask(gw, token, `Hi ${i}`);
  assert.equal(await ha1State(gw), "ok", "a served request 0 s ago: the token's failures count once");
  time.advance(10_000);
  for (let i = 0; i < 2; i++) await ask(gw, token, `Hi ${i}`);
  assert.equal(await ha1State(gw), "cooling_down", "nothing served well for a cooldown (10 s): every failure counts");
  assert.deepEqual(await ask(gw, token, "Hi"), { status: 200, upstreams: ["ha2"] });
});

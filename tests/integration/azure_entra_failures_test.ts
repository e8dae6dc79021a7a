/**
 * @module An Azure OpenAI upstream whose credential fails, against the fake resource and Entra ID token endpoint: a
 * refusing endpoint asked once for many requests and again only after its failure's hold; a hung one holding a
 * request for one wait, never a wait per attempt; a resource refusing every token answered with one fresh token and
 * one more try; and `/healthz` and the console saying what each upstream made of its credential.
 */
import assert from "node:assert/strict";
import { ENTRA } from "../_fake_azure.ts";
import { azureRig } from "../_azure_upstream.ts";
import { open, signIn } from "../_console.ts";
import { readText } from "../_helpers.ts";
import { FAILURE_HOLD_MS } from "../../src/providers/token_cache.ts";

const BODY = { model: "codex-entra", input: "Hi", store: false };
const TOKEN_PATH = `/${ENTRA.tenant}/oauth2/v2.0/token`;
/** Retries to the same deployment allowed, so a test sees whether one is made. */
const RETRYING = "{ deadline_ms: 10000, max_attempts: 3, affinity: { enabled: false }, " +
  "retry_budget: { ratio: 1, min_retries: 100 } }";
const REFUSED = { status: 401, error: "invalid_client", code: 7000215, description: "Invalid client secret provided" };

/** What `/healthz` says of each upstream's credential. */
async function credentials(url: string): Promise<Record<string, string>> {
  const health = await (await fetch(`${url}/healthz`)).json();
  return Object.fromEntries(
    Object.entries(health.upstreams as Record<string, { credential: string }>).map(([name, u]) => [name, u.credential]),
  );
}

Deno.test("Azure, Entra ID: a refusing token endpoint is asked once for many requests, and again only after a while", async () => {
  await using rig = await azureRig({ routing: RETRYING });
  rig.entra.failure = REFUSED;
  const first = await Promise.all(Array.from({ length: 5 }, () => rig.post("/v1/responses", BODY)));
  for (let i = 0; i < 5; i++) first.push(await rig.post("/v1/responses", { ...BODY, stream: i % 2 === 0 }));
  for (const res of first) {
    const text = await readText(res);
    assert.equal(res.status, 502, text);
    assert.match(text, /could not get an access token: The token endpoint answered 401 \(invalid_client/);
  }
  assert.equal(rig.entra.refused.length, 1, "ten requests, one token request");
  assert.ok(rig.gw.exchanges.every((e) => e.attempts.length === 1), "no request asked the upstream twice");
  rig.clock.now += FAILURE_HOLD_MS - 1;
  await (await rig.post("/v1/responses", BODY)).body?.cancel();
  assert.equal(rig.entra.refused.length, 1);
  rig.clock.now += 1;
  rig.entra.failure = undefined;
  const served = await rig.post("/v1/responses", BODY);
  assert.equal(served.status, 200, await readText(served));
  assert.deepEqual([rig.entra.refused.length, rig.entra.grants.length], [1, 1]);
});

Deno.test("Azure, Entra ID: a hung token endpoint holds a request for one wait, and it is not asked again in it", async () => {
  await using rig = await azureRig({ routing: RETRYING, timeoutMs: 300 });
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  rig.entra.hold = released;
  // Should the test fail with the endpoint still held, the fake upstream can still shut down.
  using _released = { [Symbol.dispose]: () => release() };
  const res = await rig.post("/v1/responses", BODY);
  const text = await readText(res);
  assert.equal(res.status, 502, text);
  assert.match(
    text,
    /Upstream \\"az-entra\\" could not get an access token: The token endpoint did not answer in time/,
  );
  const [exchange] = rig.gw.exchanges;
  assert.deepEqual(exchange.attempts.map((a) => [a.upstream, a.outcome]), [["az-entra", "upstream"]]);
  assert.equal(rig.upstream.requests.filter((r) => r.path === TOKEN_PATH).length, 1);
  assert.equal(rig.resources["az-entra"].unauthorized, 0, "nothing went to the resource without a token");
  assert.equal((await credentials(rig.gw.url))["az-entra"], "unavailable");
});

Deno.test("Azure, Entra ID: a resource that refuses every token gets one fresh token and one more try, then a 502", async () => {
  await using rig = await azureRig({ routing: RETRYING });
  rig.resources["az-entra"].refuseAll = true;
  const res = await rig.post("/v1/responses", BODY);
  const text = await readText(res);
  assert.equal(res.status, 502, text);
  assert.match(text, /Upstream \\"az-entra\\" rejected the gateway's credentials/);
  assert.equal(rig.resources["az-entra"].unauthorized, 2, "the first token and exactly one fresh one");
  assert.equal(rig.entra.grants.length, 2);
  assert.equal(rig.gw.logs.filter((line) => line.event === "token_refused").length, 1);
  assert.equal(rig.gw.exchanges[0].attempts.length, 1, "a refused credential is not tried again on the upstream");
  assert.equal((await credentials(rig.gw.url))["az-entra"], "refused");
});

Deno.test("/healthz says an upstream's credential is refused (a key answered 401, a grant refused) until it is accepted", async () => {
  await using rig = await azureRig({
    gateway: {
      env: { AZURE_OPENAI_API_KEY: "a-key-the-resource-does-not-know", AZURE_CLIENT_SECRET: ENTRA.clientSecret },
    },
  });
  assert.deepEqual(await credentials(rig.gw.url), { "az-key": "untried", "az-chat": "untried", "az-entra": "untried" });
  rig.entra.failure = REFUSED;
  for (const model of ["codex", "codex-entra"]) {
    const res = await rig.post("/v1/responses", { ...BODY, model });
    assert.equal(res.status, 502, await readText(res));
  }
  assert.deepEqual(await credentials(rig.gw.url), { "az-key": "refused", "az-chat": "untried", "az-entra": "refused" });
  const health = await (await fetch(`${rig.gw.url}/healthz`)).json();
  assert.equal(health.upstreams["az-key"].has_key, true, "the key is set; the resource refuses it");
  rig.entra.failure = undefined;
  rig.clock.now += FAILURE_HOLD_MS;
  const served = await rig.post("/v1/responses", BODY);
  assert.equal(served.status, 200, await readText(served));
  assert.equal((await credentials(rig.gw.url))["az-entra"], "accepted");
});

Deno.test("the console shows a refused credential beside the upstream, on the overview and the upstreams page", async () => {
  await using rig = await azureRig({ gateway: { admin: true } });
  rig.entra.failure = REFUSED;
  await (await rig.post("/v1/responses", BODY)).body?.cancel();
  const cookie = await signIn(rig.gw);
  const overview = (await open(rig.gw, "/ui/", cookie)).text;
  assert.match(overview, /<strong>az-entra<\/strong>[\s\S]*?credential refused/);
  assert.doesNotMatch(overview, /<strong>az-key<\/strong>[^]*?credential refused[^]*?<strong>az-chat/);
  const upstreams = (await open(rig.gw, "/ui/upstreams", cookie)).text;
  assert.match(upstreams, /AZURE_CLIENT_SECRET<\/code>\s*<span[^>]*>refused</);
});

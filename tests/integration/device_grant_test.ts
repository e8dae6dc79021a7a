/**
 * @module POST /auth/device and /auth/device/token over real HTTP, with a real OpenID provider on 127.0.0.1: the
 * RFC 8628 answers (pending, slow_down before the interval, expired_token for a code left too long, invalid_grant for
 * an unknown code or one used already, access_denied for a person an operator removed or whose email is not verified),
 * a field named when missing, a grant any instance can answer, sign-ins limited per address, and a clear 404 where
 * sign-in is not set up. The gateway's clock is the test's, and its KV drops entries by that clock.
 */
import assert from "node:assert/strict";
import { EXPIRED_KEPT_MS } from "../../src/access/device_grant.ts";
import { overrideKey, personTag } from "../../src/access/people.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { startGateway } from "../_helpers.ts";
import { countingTokenCalls, startOidcProvider } from "../_oidc_provider.ts";
import { deviceSetup, startDeviceGateway } from "../_device.ts";

async function call(url: string, path: string, body: unknown, address?: string) {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...address ? { "x-forwarded-for": address } : {} },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after") };
}

Deno.test("the device endpoints answer RFC 8628's errors: pending, slow_down, expired_token, invalid_grant", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
  const setup = await deviceSetup(provider, upstream.url);
  await using gw = setup.gw;
  const started = await call(gw.url, "/auth/device", {});
  assert.equal(started.status, 200);
  const grant = started.body;
  assert.deepEqual(Object.keys(grant).sort(), [
    "device_code",
    "expires_in",
    "interval",
    "user_code",
    "verification_uri",
    "verification_uri_complete",
  ]);
  assert.equal(grant.interval, 5);
  assert.ok(grant.verification_uri_complete.startsWith(`${provider.issuer}/`));

  const poll = (code = grant.device_code) => call(gw.url, "/auth/device/token", { device_code: code });
  const early = await poll();
  assert.deepEqual([early.status, early.body.error], [400, "slow_down"]);
  setup.advance(5000);
  const waiting = await poll();
  assert.deepEqual([waiting.status, waiting.body.error], [400, "authorization_pending"]);
  assert.equal(typeof waiting.body.error_description, "string");

  const unknown = await poll("not-a-code-of-this-gateway");
  assert.deepEqual([unknown.status, unknown.body.error], [400, "invalid_grant"]);
  const missing = await call(gw.url, "/auth/device/token", { group: "default" });
  assert.deepEqual([missing.status, missing.body], [400, {
    error: "invalid_request",
    error_description: "device_code: required",
  }]);

  const long = await call(gw.url, "/auth/device/token", { device_code: grant.device_code, name: "n".repeat(101) });
  assert.deepEqual([long.status, long.body], [400, {
    error: "invalid_request",
    error_description: "name: must be a string of 1 to 100 characters",
  }]);

  // Left too long: KV has dropped what it held for the grant's lifetime, and the code is still told it expired.
  setup.advance(grant.expires_in * 1000);
  const expired = await poll();
  assert.deepEqual([expired.status, expired.body.error], [400, "expired_token"]);
  setup.advance(EXPIRED_KEPT_MS / 2);
  const later = await poll();
  assert.deepEqual([later.status, later.body.error], [400, "expired_token"], "every poll until it is forgotten");
  setup.advance(EXPIRED_KEPT_MS / 2);
  const gone = await poll();
  assert.deepEqual([gone.status, gone.body.error], [400, "invalid_grant"], "forgotten an hour after it expired");
});

Deno.test("a grant that gave its token is gone: its device_code is unknown from then on and the provider is not asked again", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
  const tokenCalls: string[] = [];
  const setup = await deviceSetup(provider, upstream.url, { fetch: countingTokenCalls(provider, tokenCalls) });
  await using gw = setup.gw;
  const grant = (await call(gw.url, "/auth/device", {})).body;
  await provider.complete(grant.verification_uri_complete, "ada");
  setup.advance(5000);
  const done = await call(gw.url, "/auth/device/token", { device_code: grant.device_code });
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.equal(tokenCalls.length, 1);
  for (let i = 0; i < 2; i++) {
    setup.advance(5000);
    const again = await call(gw.url, "/auth/device/token", { device_code: grant.device_code });
    assert.deepEqual([again.status, again.body.error], [400, "invalid_grant"]);
    assert.match(again.body.error_description, /Unknown or finished device_code/);
  }
  assert.equal(tokenCalls.length, 1, "the provider is asked once, for the poll that got the token");
  assert.equal((await gw.store.listTokens()).filter((token) => token.owner).length, 1, "one token made");
});

Deno.test('an id_token whose email_verified is the string "false" gets access_denied and no token', async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ said: { email: "said@example.com", email_verified: "false" } });
  const setup = await deviceSetup(provider, upstream.url);
  await using gw = setup.gw;
  const grant = (await call(gw.url, "/auth/device", {})).body;
  await provider.complete(grant.verification_uri_complete, "said");
  setup.advance(5000);
  const denied = await call(gw.url, "/auth/device/token", { device_code: grant.device_code });
  assert.deepEqual([denied.status, denied.body.error], [400, "access_denied"]);
  assert.match(denied.body.error_description, /not verified this email/);
  assert.equal((await gw.store.listTokens()).filter((token) => token.owner).length, 0);
});

Deno.test("a grant started on one instance is answered by another sharing its KV", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
  await using kv = await Deno.openKv(":memory:");
  const later = () => new Date(Date.now() + 6000);
  await using first = await startDeviceGateway(provider, upstream.url, { kv });
  await using second = await startDeviceGateway(provider, upstream.url, { kv, now: later });
  const grant = (await call(first.url, "/auth/device", {})).body;
  await provider.complete(grant.verification_uri_complete, "ada");
  const done = await call(second.url, "/auth/device/token", { device_code: grant.device_code });
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.equal(done.body.owner, "ada@example.com");
  assert.match(done.body.token, /^sk-/);
  assert.equal((await second.store.getToken(done.body.token_id))?.owner, "ada@example.com");
});

Deno.test("a person an operator removed gets access_denied even though a rule admits them", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
  const setup = await deviceSetup(provider, upstream.url);
  await using gw = setup.gw;
  await gw.store.kv.set(overrideKey(await personTag("ada@example.com")), {
    email: "ada@example.com",
    role: null,
    token_groups: [],
    updated_at: new Date().toISOString(),
    updated_by: "admin key",
  });
  const grant = (await call(gw.url, "/auth/device", {})).body;
  await provider.complete(grant.verification_uri_complete, "ada");
  setup.advance(5000);
  const denied = await call(gw.url, "/auth/device/token", { device_code: grant.device_code });
  assert.deepEqual([denied.status, denied.body.error], [400, "access_denied"]);
  assert.equal((await gw.store.listTokens()).filter((token) => token.owner).length, 0);
});

Deno.test("sign-ins are limited per client address: past the burst a 429 with retry-after, others unaffected", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({});
  await using gw = await startDeviceGateway(provider, upstream.url, { top: "trusted_proxies: [127.0.0.1/32]\n" });
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) statuses.push((await call(gw.url, "/auth/device", {}, "203.0.113.7")).status);
  assert.deepEqual(statuses, [...Array(20).fill(200), 429]);
  const refused = await call(gw.url, "/auth/device", {}, "203.0.113.7");
  assert.deepEqual([refused.status, refused.body.error], [429, "slow_down"]);
  assert.match(refused.body.error_description, /Too many sign-in requests from this address/);
  assert.ok(Number(refused.retryAfter) > 0);
  const guesses = await call(gw.url, "/auth/device/token", { device_code: "guess" }, "203.0.113.7");
  assert.equal(guesses.status, 429, "polls with made-up codes come from the same allowance");
  assert.equal((await call(gw.url, "/auth/device", {}, "198.51.100.9")).status, 200);
});

Deno.test("without auth.oidc the device endpoints answer 404 saying sign-in is not set up", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const res = await call(gw.url, "/auth/device", {});
  assert.deepEqual([res.status, res.body], [404, {
    error: "invalid_request",
    error_description: "This gateway has no sign-in for people (auth.oidc is not set)",
  }]);
});

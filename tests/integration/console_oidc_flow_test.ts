/**
 * @module One console sign-in's flow through a real OpenID provider on 127.0.0.1, over HTTP: it is finished at most
 * once (a replayed callback is refused before the provider is asked, on this instance or another sharing the KV), its
 * cookie is refused past its 10 minutes, an email the provider has not verified as the boolean true gets no session,
 * and an id_token without the groups claim that rules match on is logged, saying what to change.
 */
import assert from "node:assert/strict";
import { callback, oidcSignIn } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { countingTokenCalls, startOidcGateway, startOidcProvider } from "../_oidc_provider.ts";

const RULES = [
  "{ group: platform-admins, role: admin }",
  "{ domain: example.com, role: member, token_groups: [default] }",
];

Deno.test("a callback replayed with its flow cookie is refused before the provider is asked, here and on another instance", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com", groups: ["platform-admins"] } });
  using kv = await Deno.openKv(":memory:");
  const calls: string[] = [];
  const fetch = countingTokenCalls(provider, calls);
  await using one = await startOidcGateway(provider, upstream.url, { roles: RULES, kv, fetch });
  await using two = await startOidcGateway(provider, upstream.url, { roles: RULES, kv, fetch });
  const good = await oidcSignIn(one, provider, "ada");
  assert.equal(good.status, 303);
  assert.ok(good.cookie);
  assert.equal(calls.length, 1);
  for (const gw of [one, two]) {
    const replay = new URL(good.callback);
    replay.host = new URL(gw.url).host;
    const replayed = await callback(replay, good.flow);
    assert.equal(replayed.status, 401, gw.url);
    assert.match(replayed.text, /This sign-in was finished already; sign in again/);
    assert.equal(replayed.cookie, undefined);
  }
  assert.equal(calls.length, 1, "the provider was asked for the first callback only");
});

Deno.test("a flow cookie past its 10 minutes is refused at the callback; one within them signs in", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com", groups: ["platform-admins"] } });
  let at = Date.now();
  const calls: string[] = [];
  await using gw = await startOidcGateway(provider, upstream.url, {
    roles: RULES,
    now: () => new Date(at),
    fetch: countingTokenCalls(provider, calls),
  });
  const late = await oidcSignIn(gw, provider, "ada", { tamper: () => at += 10 * 60_000 });
  assert.equal(late.status, 401);
  assert.match(late.text, /This sign-in was not started here, or took too long; sign in again/);
  assert.equal(late.cookie, undefined);
  assert.equal(calls.length, 0, "the provider is not asked for a flow out of time");
  const inTime = await oidcSignIn(gw, provider, "ada", { tamper: () => at += 10 * 60_000 - 1000 });
  assert.equal(inTime.status, 303);
  assert.ok(inTime.cookie);
});
Deno.test('an email_verified that is not the boolean true (the string "false", none at all) gets no session', async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({
    said: { email: "said@example.com", email_verified: "false" },
    silent: { email: "silent@example.com", email_verified: undefined },
  });
  await using gw = await startOidcGateway(provider, upstream.url, { roles: RULES });
  for (const login of ["said", "silent"]) {
    const refused = await oidcSignIn(gw, provider, login);
    assert.equal(refused.status, 401, login);
    assert.match(refused.text, /The identity provider has not verified this email/, login);
    assert.equal(refused.cookie, undefined, login);
  }
  // A provider the operator trusts without the claim: a missing claim is taken, the string "false" still is not.
  await using trusting = await startOidcGateway(provider, upstream.url, {
    roles: RULES,
    oidc: ["require_email_verified: false"],
  });
  assert.equal((await oidcSignIn(trusting, provider, "silent")).status, 303);
  assert.equal((await oidcSignIn(trusting, provider, "said")).status, 401);
});

Deno.test("rules on group with no groups claim: a warning at start and a log line at each such sign-in, saying what to change", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com", groups: ["platform-admins"] } });
  await using unasked = await startOidcGateway(provider, upstream.url, {
    roles: RULES,
    scopes: ["openid", "email", "profile"],
  });
  const started = unasked.logs.filter((line) => line.event === "oidc_groups_not_requested");
  assert.equal(started.length, 1);
  assert.equal(started[0].level, "warn");
  assert.match(String(started[0].advice), /auth\.oidc\.roles match on group, .*add groups to auth\.oidc\.scopes/);
  const ada = await oidcSignIn(unasked, provider, "ada");
  assert.equal(ada.status, 303, "signed in by the next rule that matches, her domain's");
  const signedIn = unasked.logs.filter((line) => line.event === "sign_in_without_groups");
  assert.equal(signedIn.length, 1);
  assert.equal(signedIn[0].email, "ada@example.com");
  assert.match(
    String(signedIn[0].advice),
    /no groups claim, so no group rule matched: add groups to auth\.oidc\.scopes/,
  );

  // Asked for groups, the same person signs in as the group's admin and nothing is logged.
  await using asked = await startOidcGateway(provider, upstream.url, { roles: RULES });
  assert.equal((await oidcSignIn(asked, provider, "ada")).status, 303);
  const noted = asked.logs.filter((line) => /groups/.test(String(line.event)));
  assert.deepEqual(noted, []);
});

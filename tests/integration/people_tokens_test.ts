/**
 * @module The tokens a person owns follow their role, on every instance sharing the KV: removing the person revokes
 * them (audited), a token of theirs stays refused while the removal stands even if an operator enables it again, and
 * a person the rules no longer match (their groups at the next sign-in, or the rules of an instance started since) is
 * refused with every token they own. A token an operator made for someone who never signed in is not judged.
 */
import assert from "node:assert/strict";
import { oidcSignIn } from "../_console.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, type TestGateway } from "../_helpers.ts";
import { startOidcGateway, startOidcProvider } from "../_oidc_provider.ts";

const ADA = "ada@example.com";
const RULES = ["{ group: eng, role: member, token_groups: [default] }"];

/**
 * Ada (in the provider's eng group) and two gateways sharing one KV, signing in through the provider under
 * {@linkcode RULES}, over an upstream that answers.
 */
async function team() {
  const upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const provider = await startOidcProvider({ ada: { email: ADA, groups: ["eng"] } });
  const kv = await Deno.openKv(":memory:");
  const one = await startOidcGateway(provider, upstream.url, { roles: RULES, kv });
  const two = await startOidcGateway(provider, upstream.url, { roles: RULES, kv });
  return {
    upstream,
    provider,
    kv,
    one,
    two,
    async [Symbol.asyncDispose]() {
      await one[Symbol.asyncDispose]();
      await two[Symbol.asyncDispose]();
      kv.close();
      await provider[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
    },
  };
}

/** A token made by the admin API, for `owner`. */
async function tokenFor(gw: TestGateway, owner: string): Promise<{ id: string; secret: string }> {
  const made = await (await gw.admin("POST", "/admin/tokens", { group: "default", owner })).json();
  return { id: made.token.id, secret: made.secret };
}

/** What `secret` gets on `gw`: 200, or the status and message of its refusal. */
async function use(gw: TestGateway, secret: string): Promise<string> {
  const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  if (res.status === 200) {
    await res.body?.cancel();
    return "200";
  }
  return `${res.status} ${(await res.json()).error.message}`;
}

/** Waits until each gateway's token cache has checked the KV for changes made on another instance. */
async function refreshed(...gateways: TestGateway[]): Promise<void> {
  await Promise.all(gateways.map((gw) => gw.deps.operator.credentials.refreshed()));
}

Deno.test("removing a person revokes every token they own, audited, and none works on either instance from then on", async () => {
  await using at = await team();
  const { one, two } = at;
  const adas = [await tokenFor(one, ADA), await tokenFor(two, ADA), await tokenFor(one, ADA)];
  const bobs = await tokenFor(one, "bob@example.com");
  await (await one.admin("POST", `/admin/tokens/${adas[2].id}/revoke`)).body?.cancel();
  for (const gw of [one, two]) {
    for (const token of [adas[0], adas[1], bobs]) assert.equal(await use(gw, token.secret), "200", "cached, in use");
  }

  const removed = await one.admin("DELETE", `/admin/people/${ADA}`);
  assert.equal(removed.status, 200);
  await removed.body?.cancel();
  await refreshed(one, two);
  for (const gw of [one, two]) {
    for (const token of adas) assert.equal(await use(gw, token.secret), "401 API key is disabled");
    assert.equal(await use(gw, bobs.secret), "200", "another person's token is untouched");
  }
  const trail = (await (await one.admin("GET", "/admin/audit")).json()).data;
  const revokes = trail.filter((r: { action: string; before: { owner?: string } }) =>
    r.action === "token.revoke" && r.before.owner === ADA
  );
  assert.deepEqual(
    revokes.map((r: { target: string; actor: string }) => [r.target, r.actor]).sort(),
    [[adas[0].id, "admin key"], [adas[1].id, "admin key"], [adas[2].id, "admin key"]].sort(),
    "each of her active tokens revoked by the one who removed her, besides the one revoked before",
  );
  assert.equal(revokes.filter((r: { target: string }) => r.target === adas[2].id).length, 1);
  assert.ok(trail.some((r: { action: string; target: string }) => r.action === "person.remove" && r.target === ADA));
});

Deno.test("a removed person's token enabled again stays refused on every instance until they are given a role again", async () => {
  await using at = await team();
  const { one, two } = at;
  const token = await tokenFor(one, ADA);
  await (await one.admin("DELETE", `/admin/people/${ADA}`)).body?.cancel();
  await (await one.admin("PATCH", `/admin/tokens/${token.id}`, { disabled: false })).body?.cancel();
  await refreshed(one, two);
  for (const gw of [one, two]) {
    assert.equal(await use(gw, token.secret), "401 API key is suspended: an operator removed its owner's role");
  }
  await (await two.admin("PUT", `/admin/people/${ADA}`, { role: "member", token_groups: ["default"] })).body?.cancel();
  await refreshed(one, two);
  for (const gw of [one, two]) assert.equal(await use(gw, token.secret), "200");
});

Deno.test("a person the rules no longer match at their next sign-in, or on an instance with other rules, is refused with every token", async () => {
  await using at = await team();
  const { one, two, provider, upstream, kv } = at;
  assert.equal((await oidcSignIn(one, provider, "ada")).status, 303);
  const token = await tokenFor(one, ADA);
  const stranger = await tokenFor(one, "carol@partner.test");
  for (const gw of [one, two]) assert.equal(await use(gw, token.secret), "200");

  // A third instance started with rules she no longer matches judges her by them.
  await using three = await startOidcGateway(provider, upstream.url, {
    roles: ["{ group: platform, role: admin }"],
    kv,
  });
  const noRule = "401 API key is suspended: its owner matches no sign-in rule of this gateway";
  assert.equal(await use(three, token.secret), noRule);
  assert.equal(await use(three, stranger.secret), "200", "someone who never signed in is not judged");

  // She left the eng group at the provider: her next sign-in is refused, and her tokens with it, everywhere.
  provider.accounts.set("ada", { email: ADA, groups: [] });
  assert.equal((await oidcSignIn(two, provider, "ada")).status, 403);
  await refreshed(one, two);
  for (const gw of [one, two]) assert.equal(await use(gw, token.secret), noRule);
  // Back in the group at the next sign-in, her tokens work again.
  provider.accounts.set("ada", { email: ADA, groups: ["eng"] });
  assert.equal((await oidcSignIn(one, provider, "ada")).status, 303);
  await refreshed(one, two);
  for (const gw of [one, two]) assert.equal(await use(gw, token.secret), "200");
});

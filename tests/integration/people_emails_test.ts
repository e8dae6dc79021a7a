/**
 * @module A person's email is one address, read alike wherever it is read, over real sign-ins through the test OpenID
 * provider: an email with two @ passes for no domain rule and is refused at sign-in, and one with a space before it is
 * the same person as without, so a role an operator removed stays removed; the admin API and a token's owner read an
 * email the same way.
 */
import assert from "node:assert/strict";
import { oidcSignIn } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { startOidcGateway, startOidcProvider } from "../_oidc_provider.ts";

const ACCOUNTS = {
  owner: { email: "owner@ex.test" },
  spaced: { email: " owner@ex.test" },
  twoAt: { email: "x@evil.example@ex.test" },
  other: { email: "x@evil.example" },
};

Deno.test("an email with two @ is refused at sign-in; one with a space before it is the same person", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await startOidcGateway(provider, upstream.url, { roles: ["{ domain: ex.test, role: viewer }"] });
  const twoAt = await oidcSignIn(gw, provider, "twoAt");
  assert.equal(twoAt.status, 401, twoAt.text);
  assert.match(twoAt.text, /email for this person is not one address/);
  assert.equal((await oidcSignIn(gw, provider, "other")).status, 403, "evil.example has no rule");

  assert.equal((await oidcSignIn(gw, provider, "owner")).status, 303, "ex.test's rule makes a viewer");
  const removed = await gw.admin("DELETE", "/admin/people/owner@ex.test");
  assert.equal(removed.status, 200, await removed.text());
  const spaced = await oidcSignIn(gw, provider, "spaced");
  assert.equal(spaced.status, 403, "the removed person, with a space before the address, is still removed");
  assert.match(spaced.text, /owner@ex\.test has no role/);
  const people = await (await gw.admin("GET", "/admin/people")).json();
  const owners = people.data.map((p: { email: string }) => p.email).filter((email: string) => email.includes("owner"));
  assert.deepEqual(owners, ["owner@ex.test"], "one person, not two");
});

Deno.test("the admin API reads a person's email and a token's owner as sign-in does: trimmed, one @", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await startOidcGateway(provider, upstream.url, { roles: ["{ domain: ex.test, role: viewer }"] });
  const set = await gw.admin("PUT", `/admin/people/${encodeURIComponent(" Owner@Ex.test ")}`, { role: "admin" });
  assert.equal(set.status, 200, await set.clone().text());
  assert.equal((await set.json()).email, "owner@ex.test");
  const twoAt = await gw.admin("PUT", `/admin/people/${encodeURIComponent("x@evil.example@ex.test")}`, {
    role: "admin",
  });
  assert.equal(twoAt.status, 400);
  assert.equal((await twoAt.json()).error.param, "email");
  const token = await gw.admin("POST", "/admin/tokens", { group: "default", owner: " Owner@ex.test" });
  assert.equal(token.status, 201, await token.clone().text());
  assert.equal((await token.json()).token.owner, "owner@ex.test");
  const bad = await gw.admin("POST", "/admin/tokens", { group: "default", owner: "a@b@ex.test" });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "owner");
});

/**
 * @module People and their roles: an owner or admin gives, changes or removes a person's role through the admin API or
 * the console (audited, with before and after); the override beats the rules at sign-in; only an owner makes an owner;
 * and a removed role or a sign-out ends the session at once on a second instance sharing the KV.
 */
import assert from "node:assert/strict";
import { oidcSignIn, open, post, signIn, signInAs } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import type { TestGateway } from "../_helpers.ts";
import { startOidcGateway, startOidcProvider, type TestProvider } from "../_oidc_provider.ts";

const ACCOUNTS = {
  ada: { email: "ada@example.com", groups: ["platform-admins"] },
  zed: { email: "zed@elsewhere.test" },
};

function gateway(upstreamUrl: string, provider: TestProvider, kv?: Deno.Kv): Promise<TestGateway> {
  return startOidcGateway(provider, upstreamUrl, { roles: ["{ group: platform-admins, role: admin }"], kv });
}

async function call(gw: TestGateway, method: string, path: string, body?: unknown, headers?: HeadersInit) {
  const res = await gw.admin(method, path, body, headers);
  return { status: res.status, body: await res.json() };
}

Deno.test("the admin API gives, lists and removes roles, audited with before and after, and checks what it is given", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(upstream.url, provider);
  const set = await call(gw, "PUT", "/admin/people/Carol@Example.com", { role: "member", token_groups: ["default"] });
  assert.equal(set.status, 200);
  assert.deepEqual(
    { email: set.body.email, role: set.body.role, source: set.body.source, token_groups: set.body.token_groups },
    { email: "carol@example.com", role: "member", source: "override", token_groups: ["default"] },
  );
  assert.equal((await call(gw, "GET", "/admin/people/carol%40example.com")).body.role, "member");
  const removed = await call(gw, "DELETE", "/admin/people/carol@example.com");
  assert.equal(removed.body.role, null);
  const list = await call(gw, "GET", "/admin/people");
  assert.deepEqual(list.body.data.map((p: { email: string; role: string }) => [p.email, p.role]), [
    ["carol@example.com", null],
  ]);
  const audit = (await call(gw, "GET", "/admin/audit")).body.data;
  assert.deepEqual(audit.map((r: { action: string }) => r.action), ["person.remove", "person.update"]);
  assert.equal(audit[0].before.role, "member");
  assert.equal(audit[0].after.role, null);
  assert.equal(audit[1].before.role, null);
  assert.equal(audit[1].target, "carol@example.com");

  const bad = [
    [{ role: "god" }, "role"],
    [{ role: "member", token_groups: ["nope"] }, "token_groups[0]"],
    [{ role: "member", extra: 1 }, "extra"],
  ] as const;
  for (const [body, param] of bad) {
    const res = await call(gw, "PUT", "/admin/people/carol@example.com", body);
    assert.equal(res.status, 400, param);
    assert.equal(res.body.error.param, param);
  }
  assert.equal((await call(gw, "PUT", "/admin/people/not-an-email", { role: "viewer" })).body.error.param, "email");
});

Deno.test("only an owner gives or takes the owner role; a viewer changes no one", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(upstream.url, provider);
  const keys: Record<string, string> = {};
  for (const role of ["admin", "viewer"]) {
    keys[role] = (await call(gw, "POST", "/admin/operator-keys", { name: `${role}-key`, role })).body.secret;
  }
  const as = (role: string) => ({ authorization: `Bearer ${keys[role]}` });
  await call(gw, "PUT", "/admin/people/olga@example.com", { role: "owner" });
  const cases = [
    ["admin", "PUT", "/admin/people/x@example.com", { role: "owner" }, 403],
    ["admin", "PUT", "/admin/people/olga@example.com", { role: "viewer" }, 403],
    ["admin", "DELETE", "/admin/people/olga@example.com", undefined, 403],
    ["admin", "PUT", "/admin/people/x@example.com", { role: "admin" }, 200],
    ["viewer", "PUT", "/admin/people/y@example.com", { role: "viewer" }, 403],
    ["viewer", "DELETE", "/admin/people/x@example.com", undefined, 403],
    ["viewer", "GET", "/admin/people", undefined, 200],
  ] as const;
  for (const [role, method, path, body, status] of cases) {
    assert.equal((await call(gw, method, path, body, as(role))).status, status, `${role} ${method} ${path}`);
  }
});

Deno.test("a role set in KV beats the rules at sign-in: changed, removed, or given to someone no rule matches", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(upstream.url, provider);
  await call(gw, "PUT", "/admin/people/ada@example.com", { role: "viewer" });
  const ada = await oidcSignIn(gw, provider, "ada");
  const change = await post(gw, "/ui/tokens", { group: "default", name: "x" }, { cookie: ada.cookie! });
  assert.equal(change.status, 403, "a viewer now, not the admin the rules make her");
  await change.body?.cancel();
  await call(gw, "DELETE", "/admin/people/ada@example.com");
  const refused = await oidcSignIn(gw, provider, "ada");
  assert.equal(refused.status, 403);
  assert.match(refused.text, /ada@example\.com has no role/);
  assert.equal((await oidcSignIn(gw, provider, "zed")).status, 403);
  await call(gw, "PUT", "/admin/people/zed@elsewhere.test", { role: "admin" });
  const zed = await oidcSignIn(gw, provider, "zed");
  assert.equal(zed.status, 303);
  const people = (await call(gw, "GET", "/admin/people")).body.data;
  const zedRow = people.find((p: { email: string }) => p.email === "zed@elsewhere.test");
  assert.equal(zedRow.role, "admin");
  assert.ok(zedRow.signed_in_at);
});

Deno.test("a removed role, or signing out, ends the session at once on a second instance sharing the KV", async () => {
  using kv = await Deno.openKv(":memory:");
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using one = await gateway(upstream.url, provider, kv);
  await using two = await gateway(upstream.url, provider, kv);
  assert.equal((await call(one, "GET", "/admin/people/ada@example.com")).body.role, null, "no groups known yet");
  const ada = await oidcSignIn(one, provider, "ada");
  const seen = (await call(two, "GET", "/admin/people/ada@example.com")).body;
  assert.deepEqual([seen.role, seen.source], ["admin", "rules"], "the rules, with the groups of her sign-in");
  assert.equal((await open(two, "/ui/tokens", ada.cookie)).status, 200);
  assert.match((await open(two, "/ui/tokens", ada.cookie)).text, /Sign out/);
  const removed = await call(one, "DELETE", "/admin/people/ada@example.com");
  assert.equal(removed.status, 200);
  const after = await open(two, "/ui/tokens", ada.cookie);
  assert.match(after.text, /name="key"/, "the sign-in page on the other instance, at once");
  assert.doesNotMatch(after.text, /Sign out/);

  await call(one, "PUT", "/admin/people/ada@example.com", { role: "admin" });
  const again = await oidcSignIn(one, provider, "ada");
  assert.match((await open(two, "/ui/tokens", again.cookie)).text, /Sign out/);
  const out = await post(one, "/ui/logout", {}, { cookie: again.cookie! });
  assert.equal(out.status, 303);
  await out.body?.cancel();
  assert.match((await open(two, "/ui/tokens", again.cookie)).text, /name="key"/);
});

Deno.test("the console's people page changes and removes roles, recorded under the one who did it", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(upstream.url, provider);
  const owner = await signIn(gw);
  const given = await post(
    gw,
    "/ui/people",
    { email: "dan@example.com", role: "member", token_groups: "default, oa" },
    {
      cookie: owner,
    },
  );
  assert.equal(given.status, 303);
  await given.body?.cancel();
  const page = await open(gw, "/ui/people", owner);
  assert.match(page.text, /dan@example\.com/);
  assert.match(page.text, /default, oa/);
  const wrong = await post(gw, "/ui/people/dan%40example.com", { role: "member", token_groups: "nope" }, {
    cookie: owner,
  });
  assert.equal(wrong.status, 400);
  assert.match(await wrong.text(), /token_groups\[0\]: no group &quot;nope&quot;|no group "nope"/);
  const admin = await signInAs(gw, { email: "ada@example.com", role: "admin" });
  const removed = await post(gw, "/ui/people/dan%40example.com/remove", {}, { cookie: admin });
  assert.equal(removed.status, 303);
  await removed.body?.cancel();
  const audit = (await call(gw, "GET", "/admin/audit")).body.data;
  assert.deepEqual(audit.map((r: { action: string; actor: string }) => [r.action, r.actor]), [
    ["person.remove", "ada@example.com"],
    ["person.update", "admin key"],
  ]);
  const toOwner = await post(gw, "/ui/people/dan%40example.com", { role: "owner" }, { cookie: admin });
  assert.equal(toOwner.status, 403);
  await toOwner.body?.cancel();
});

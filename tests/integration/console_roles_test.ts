/**
 * @module Console sessions that carry a person: the role decides what they may do (a viewer no change on any route of
 * the table, a member no page but a member's), the audit trail names their email, and a role removed or changed in KV
 * counts at the next page; a cookie cannot borrow another person's role.
 */
import assert from "node:assert/strict";
import { overrideKey, personTag, type RoleOverride } from "../../src/access/people.ts";
import { ADMIN_ENDPOINTS } from "../../src/admin/routes.ts";
import { CONSOLE_ROUTES } from "../../src/console/routes.ts";
import { startSession } from "../../src/console/session.ts";
import { open, PAGES, post, signIn, signInAs } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY, deadlineFetch, startGateway } from "../_helpers.ts";

/** A role an admin-key operator gave `email` in KV, as the people pages write it. */
function override(email: string, role: RoleOverride["role"]): RoleOverride {
  return { email, role, token_groups: [], updated_at: new Date().toISOString(), updated_by: "admin key" };
}

/** A route's path with its parameters filled by something that may or may not exist. */
function concrete(path: string): string {
  return `/ui${path.replaceAll(/:[a-z_]+/g, "x")}`;
}

Deno.test("a viewer reads every page, but every POST route of the console's table answers 403", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signInAs(gw, { email: "vera@example.com", role: "viewer" });
  for (const page of PAGES) assert.equal((await open(gw, page, cookie)).status, 200, page);
  const changes = CONSOLE_ROUTES.filter((route) => route.method !== "GET");
  assert.ok(changes.length >= 5);
  for (const route of changes) {
    const res = await post(gw, concrete(route.path), { name: "x", group: "default" }, { cookie });
    const text = await res.text();
    assert.equal(res.status, 403, `${route.method} ${route.path}`);
    assert.match(text, /viewer/);
  }
});

Deno.test("a viewer posting any form the owner's pages hold, with its fields, is refused 403 and nothing changes", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const made = await (await gw.admin("POST", "/admin/tokens", { group: "default", name: "t" })).json();
  await (await gw.admin("POST", "/admin/groups", { name: "extra", listing: "auto", models: [] })).body?.cancel();
  await (await gw.admin("POST", "/admin/operator-keys", { name: "k", role: "admin" })).body?.cancel();
  await (await gw.admin("PUT", "/admin/people/p@example.com", { role: "viewer" })).body?.cancel();
  const owner = await signIn(gw);
  const viewer = await signInAs(gw, { email: "vera@example.com", role: "viewer" });
  const pages = [...PAGES, `/ui/tokens/${made.token.id}`, "/ui/groups/extra"];
  const forms = new Map<string, Record<string, string>>();
  for (const page of pages) {
    const { text } = await open(gw, page, owner);
    for (const form of text.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)) {
      const action = form[1].replaceAll("&amp;", "&");
      if (action === "/ui/logout") continue;
      const fields: Record<string, string> = {};
      for (const input of form[2].matchAll(/name="([^"]+)"(?: value="([^"]*)")?/g)) fields[input[1]] = input[2] ?? "x";
      forms.set(action, fields);
    }
  }
  assert.ok(forms.size >= 8, `found ${forms.size} forms`);
  const state = async () =>
    (await Array.fromAsync(gw.store.kv.list({ prefix: [] }))).map((e) => `${Deno.inspect(e.key)} ${e.versionstamp}`);
  const before = await state();
  for (const [action, fields] of forms) {
    const res = await post(gw, action, fields, { cookie: viewer });
    assert.equal(res.status, 403, action);
    await res.body?.cancel();
  }
  assert.deepEqual(await state(), before, "the viewer changed nothing in KV");
});

Deno.test("a viewer's operator key is refused (403) on every admin endpoint that is not a GET", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const { secret } = await (await gw.admin("POST", "/admin/operator-keys", { name: "vera", role: "viewer" })).json();
  const changes = ADMIN_ENDPOINTS.filter((endpoint) => endpoint.method !== "GET");
  assert.ok(changes.length >= 10);
  for (const endpoint of changes) {
    const res = await gw.admin(endpoint.method, endpoint.path.replace(":id", "x@example.com"), {}, {
      authorization: `Bearer ${secret}`,
    });
    assert.equal(res.status, 403, `${endpoint.method} ${endpoint.path}`);
    await res.body?.cancel();
  }
});

Deno.test("a member is refused (403) every console route not marked for members", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signInAs(gw, { email: "max@example.com", role: "member", token_groups: ["default"] });
  // The overview's address is a member's way home: it sends them to their own tokens.
  const home = await deadlineFetch()(`${gw.url}/ui/`, { redirect: "manual", headers: { cookie } });
  await home.body?.cancel();
  assert.equal(home.status, 303);
  assert.equal(home.headers.get("location"), "/ui/my/tokens");
  for (const route of CONSOLE_ROUTES.filter((route) => !route.member && route.path !== "/")) {
    const res = route.method === "GET"
      ? await open(gw, concrete(route.path), cookie)
      : await post(gw, concrete(route.path), {}, { cookie }).then(async (r) => ({
        status: r.status,
        text: await r.text(),
      }));
    assert.equal(res.status, 403, `${route.method} ${route.path}`);
  }
});

Deno.test("an admin's change is recorded under their email; a removed role ends the session at the next page", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signInAs(gw, { email: "Ada@Example.com", role: "admin" });
  const res = await post(gw, "/ui/tokens", { name: "from-ada", group: "default" }, { cookie });
  assert.equal(res.status, 201);
  await res.body?.cancel();
  const audit = await (await gw.admin("GET", "/admin/audit?action=token.create")).json();
  assert.equal(audit.data[0].actor, "ada@example.com");
  assert.equal(audit.data[0].via, "console");

  const tag = await personTag("ada@example.com");
  await gw.store.kv.set(overrideKey(tag), override("ada@example.com", "viewer"));
  const refused = await post(gw, "/ui/tokens", { name: "again", group: "default" }, { cookie });
  assert.equal(refused.status, 403);
  await refused.body?.cancel();
  await gw.store.kv.set(overrideKey(tag), override("ada@example.com", null));
  const page = await open(gw, "/ui/tokens", cookie);
  assert.match(page.text, /name="key"/, "the sign-in page, not the tokens page");
  assert.doesNotMatch(page.text, /from-ada/);
});

Deno.test("a cookie that names another person's tag is no session at all", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const member = await signInAs(gw, { email: "max@example.com", role: "member" });
  const olga = await personTag("olga@example.com");
  await gw.store.kv.set(overrideKey(olga), override("olga@example.com", "owner"));
  const borrowed = member.replace(/\.[A-Za-z0-9_-]{43}$/, `.${olga}`);
  assert.notEqual(borrowed, member);
  const page = await open(gw, "/ui/operators", borrowed);
  assert.equal(page.status, 200);
  assert.match(page.text, /name="key"/);
});

Deno.test("a sign-in whose person's role changed meanwhile starts no session (the override it read is checked)", async () => {
  using kv = await Deno.openKv(":memory:");
  const key = overrideKey(await personTag("ada@example.com"));
  const read = await kv.get<RoleOverride>(key);
  await kv.set(key, override("ada@example.com", null));
  const person = { email: "ada@example.com", role: "admin" as const, token_groups: [] };
  const limits = { maxMs: 60_000, idleMs: 60_000, now: new Date() };
  assert.equal(await startSession(kv, ADMIN_KEY, { ...limits, person, check: read }), undefined);
  assert.deepEqual(await Array.fromAsync(kv.list({ prefix: ["console_session"] })), []);
  const fresh = await kv.get<RoleOverride>(key);
  assert.ok(await startSession(kv, ADMIN_KEY, { ...limits, person, check: fresh }));
});

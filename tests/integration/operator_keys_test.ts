/**
 * @module Operators' API keys over real HTTP: minted with the admin key and shown once, stored hashed, attributed in
 * the audit trail, a viewer refused every change (403), owner keys only for owners, revoked and expired keys refused;
 * the console's page and the CLI's commands for them.
 */
import assert from "node:assert/strict";
import { ADMIN_ENDPOINTS, serviceOf } from "../../src/admin/routes.ts";
import { cliSetup } from "../_cli.ts";
import { open, post, signIn } from "../_console.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { ADMIN_KEY, anthropicMessage, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";

async function mint(
  gw: TestGateway,
  body: Record<string, unknown>,
  key = ADMIN_KEY,
): Promise<{ key: { id: string; name: string; role: string; expires_at: string }; secret: string }> {
  const res = await gw.admin("POST", "/admin/operator-keys", body, { authorization: `Bearer ${key}` });
  assert.equal(res.status, 201, await res.clone().text());
  return await res.json();
}

function as(secret: string): Record<string, string> {
  return { authorization: `Bearer ${secret}`, "user-agent": "ops-laptop/2" };
}

Deno.test("an operator key is shown once, stored only as a hash, and its calls are attributed to it", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const { key, secret } = await mint(gw, { name: "alice@example.com", role: "admin" });
  assert.match(secret, /^mgk-[A-Za-z0-9_-]{43}$/);
  assert.equal(key.role, "admin");
  const list = await gw.admin("GET", "/admin/operator-keys");
  const listed = await list.text();
  assert.ok(listed.includes(key.id) && !listed.includes(secret));
  const stored: string[] = [];
  for await (const entry of gw.store.kv.list({ prefix: [] })) {
    stored.push(JSON.stringify([entry.key, entry.value], (_, v) => typeof v === "bigint" ? String(v) : v));
  }
  assert.ok(!stored.join("\n").includes(secret), "the secret is not in KV");

  const created = await gw.admin("POST", "/admin/tokens", { group: "default", name: "ci" }, as(secret));
  assert.equal(created.status, 201);
  const { token } = await created.json();
  const audit = await (await gw.admin("GET", `/admin/audit?actor=${key.id}`)).json();
  assert.deepEqual(
    audit.data.map((r: Record<string, unknown>) => [r.actor, r.actor_key, r.via, r.action, r.target, r.user_agent]),
    [["alice@example.com", key.id, "api", "token.create", token.id, "ops-laptop/2"]],
  );
  const minted = (await (await gw.admin("GET", "/admin/audit?action=operator_key.create")).json()).data[0];
  assert.equal(minted.actor, "admin key");
  assert.equal(minted.after.name, "alice@example.com");
  assert.ok(!JSON.stringify(audit).includes(secret) && !JSON.stringify(minted).includes(secret));
  assert.ok(!JSON.stringify(gw.logs).includes(secret));
});

Deno.test("a viewer key reads everything and every state-changing admin route answers 403, whatever the body", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const { secret } = await mint(gw, { name: "auditor", role: "viewer" });
  const tokenId = (await gw.store.findToken(gw.tokens.default))!.id;
  const path = (pattern: string) => pattern.replace(":id", pattern.includes("groups") ? "default" : tokenId);
  const reads = ADMIN_ENDPOINTS.filter((e) => e.method === "GET" && !e.path.includes(":id"));
  const changes = ADMIN_ENDPOINTS.filter((e) => e.method !== "GET");
  assert.ok(changes.length >= 10);
  for (const e of reads) {
    const res = await gw.admin("GET", e.path, undefined, as(secret));
    assert.equal(res.status, 200, e.path);
    await res.body?.cancel();
  }
  const valid: Record<string, unknown> = { group: "default", name: "x", listing: "openai", models: [], role: "viewer" };
  for (const e of changes) {
    for (const body of [e.method === "DELETE" ? undefined : valid, "{not json"]) {
      const res = await gw.admin(e.method, path(e.path), body, as(secret));
      assert.equal(res.status, 403, `${e.method} ${e.path}`);
      const { error } = await res.json();
      assert.equal(error.type, "permission_error");
      assert.match(error.message, /"viewer" of "auditor" may read but not change/);
    }
  }
  // Nothing changed: the token still works and the only record is the key's own minting.
  const trail = await (await gw.admin("GET", "/admin/audit")).json();
  assert.deepEqual(trail.data.map((r: { action: string }) => r.action), ["operator_key.create"]);
  assert.equal((await gw.store.getToken(tokenId))!.disabled, false);
});

Deno.test("an admin key mints admin and viewer keys but not owner keys, and cannot revoke an owner's", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const admin = await mint(gw, { name: "bob", role: "admin" });
  const owner = await mint(gw, { name: "carol", role: "owner" });
  const viewer = await mint(gw, { name: "dave", role: "viewer" }, admin.secret);
  assert.equal(viewer.key.role, "viewer");
  const up = await gw.admin("POST", "/admin/operator-keys", { name: "eve", role: "owner" }, as(admin.secret));
  assert.equal(up.status, 403);
  assert.match((await up.json()).error.message, /may not mint an owner's key/);
  const end = await gw.admin("DELETE", `/admin/operator-keys/${owner.key.id}`, undefined, as(admin.secret));
  assert.equal(end.status, 403);
  await end.body?.cancel();
  // An owner key may do both.
  const byOwner = await mint(gw, { name: "frank", role: "owner" }, owner.secret);
  assert.equal(byOwner.key.role, "owner");
});

Deno.test("a revoked or expired operator key answers 401, and a wrong one is no key at all", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  let now = Date.parse("2026-03-05T10:00:00Z");
  await using gw = await startGateway(upstream.url, { admin: true, now: () => new Date(now) });
  const short = await mint(gw, { name: "temp", role: "admin", expires_at: "2026-03-06T10:00:00Z" });
  const lasting = await mint(gw, { name: "gone", role: "admin" });
  assert.equal(lasting.key.expires_at, "2026-06-03T10:00:00.000Z", "90 days by default");
  const ok = await gw.admin("GET", "/admin/tokens", undefined, as(short.secret));
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  const revoked = await gw.admin("DELETE", `/admin/operator-keys/${lasting.key.id}`);
  assert.equal((await revoked.json()).revoked, true);
  now += 2 * 86_400_000;
  for (
    const [secret, says] of [
      [short.secret, /^Operator key has expired/],
      [lasting.secret, /^Operator key is revoked/],
      [`mgk-${"A".repeat(43)}`, /^Invalid admin key/],
    ] as const
  ) {
    const res = await gw.admin("GET", "/admin/tokens", undefined, as(secret));
    assert.equal(res.status, 401);
    assert.match((await res.json()).error.message, says);
  }
  // An operator key is not a client token.
  const client = await gw.post("/v1/messages", messagesBody(), { "x-api-key": short.secret });
  assert.equal(client.status, 401);
  await client.body?.cancel();
});

Deno.test("minting checks its input: name, role and an expiry in the future, each named", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true, now: () => new Date("2026-03-05T10:00:00Z") });
  for (
    const [body, param] of [
      [{ role: "admin" }, "name"],
      [{ name: "a b", role: "admin" }, "name"],
      [{ name: "cli", role: "admin" }, "name"],
      [{ name: "x", role: "root" }, "role"],
      [{ name: "x", role: "admin", expires_at: "2026-03-01T00:00:00Z" }, "expires_at"],
      [{ name: "x", role: "admin", colour: 1 }, "colour"],
    ] as const
  ) {
    const res = await gw.admin("POST", "/admin/operator-keys", body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal((await res.json()).error.param, param);
  }
  const missing = await gw.admin("DELETE", "/admin/operator-keys/opk_nope");
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
});

Deno.test("the service itself refuses a viewer every change, so no surface can forget to", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const service = serviceOf(gw.deps, { name: "auditor", role: "viewer", via: "console" });
  const tokenId = (await gw.store.findToken(gw.tokens.default))!.id;
  const changes: [string, () => Promise<unknown>][] = [
    ["createToken", () => service.createToken({ group: "default" })],
    ["updateToken", () => service.updateToken(tokenId, { name: "x" })],
    ["revokeToken", () => service.revokeToken(tokenId)],
    ["createGroup", () => service.createGroup({ name: "g", listing: "openai", models: [] })],
    ["updateGroup", () => service.updateGroup("default", { listing: "openai" })],
    ["deleteGroup", () => service.deleteGroup("default")],
    ["deleteResponse", () => service.deleteResponse("resp_1")],
    ["purgeResponses", () => service.purgeResponses(tokenId)],
    ["createOperatorKey", () => service.createOperatorKey({ name: "x", role: "viewer" })],
    ["revokeOperatorKey", () => service.revokeOperatorKey("opk_1")],
  ];
  for (const [name, change] of changes) {
    await assert.rejects(change, (err: { status?: number }) => err.status === 403, name);
  }
  assert.equal((await service.listTokens()).length, 4);
});

Deno.test("the console mints an operator key, shows its secret once, lists it without, and revokes it", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  const minted = await post(gw, "/ui/operators", { name: "alice@example.com", role: "viewer" }, { cookie });
  assert.equal(minted.status, 201);
  const page = await minted.text();
  const secret = page.match(/mgk-[A-Za-z0-9_-]{43}/)![0];
  const list = await open(gw, "/ui/operators", cookie);
  assert.match(list.text, /alice@example\.com/);
  assert.ok(!list.text.includes(secret), "the secret is not shown again");
  const read = await gw.admin("GET", "/admin/tokens", undefined, as(secret));
  assert.equal(read.status, 200);
  await read.body?.cancel();
  const id = (await (await gw.admin("GET", "/admin/operator-keys")).json()).data[0].id;
  const revoked = await post(gw, `/ui/operators/${id}/revoke`, {}, { cookie });
  assert.equal(revoked.status, 303);
  await revoked.body?.cancel();
  const after = await gw.admin("GET", "/admin/tokens", undefined, as(secret));
  assert.equal(after.status, 401);
  await after.body?.cancel();
  const trail = await (await gw.admin("GET", "/admin/audit")).json();
  assert.deepEqual(trail.data.map((r: Record<string, string>) => [r.action, r.actor, r.via]), [
    ["operator_key.revoke", "admin key", "console"],
    ["operator_key.create", "admin key", "console"],
  ]);
  // A bad name is named on the page, with the form kept.
  const bad = await post(gw, "/ui/operators", { name: "a b", role: "admin" }, { cookie });
  assert.equal(bad.status, 400);
  assert.match(await bad.text(), /name: must be 1 to 100 letters/);
});

Deno.test('the CLI mints, lists and revokes operator keys, recorded as "cli"', async () => {
  await using upstream = fakeUpstream();
  await using setup = await cliSetup(upstream.url);
  const minted = await setup.cli("operator-key create --name ops@example.com --role viewer --expires-in 30d");
  assert.equal(minted.code, 0, minted.err);
  assert.match(minted.out, /^mgk-[A-Za-z0-9_-]{43}$/);
  assert.match(minted.err, /Minted operator key opk_[0-9a-f]{16} for "ops@example.com" \(viewer\)/);
  const listed = await setup.cli("operator-key list");
  assert.match(listed.out, /opk_[0-9a-f]{16} +ops@example\.com +viewer .* active$/m);
  assert.ok(!listed.out.includes(minted.out));
  const id = listed.out.match(/opk_[0-9a-f]{16}/)![0];
  assert.equal((await setup.cli(`operator-key revoke ${id}`)).code, 0);
  assert.match((await setup.cli("operator-key list")).out, /revoked$/m);
  const trail = JSON.parse((await setup.cli("audit --json")).out);
  assert.deepEqual(trail.data.map((r: Record<string, string>) => [r.action, r.actor]), [
    ["operator_key.revoke", "cli"],
    ["operator_key.create", "cli"],
  ]);
  await assert.rejects(setup.cli("operator-key create --name x --role root"), /role: /);
  assert.equal((await setup.cli("operator-key revoke")).code, 2);
});

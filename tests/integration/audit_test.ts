/**
 * @module The audit trail over real HTTP: every change through the admin API, the console and the CLI is recorded
 * with who, from where and before/after; GET /admin/audit filters and pages; retention; no secret ever recorded.
 */
import assert from "node:assert/strict";
import { auditTrail } from "../../src/admin/audit.ts";
import { createKvWriter } from "../../src/core/kv_write.ts";
import { cliSetup } from "../_cli.ts";
import { open, PAGES, post, signIn } from "../_console.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { ADMIN_KEY, anthropicMessage, startGateway, type TestGateway } from "../_helpers.ts";

interface Row {
  time: string;
  actor: string;
  actor_key: string | null;
  via: string;
  action: string;
  target: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  ip: string | null;
  user_agent: string | null;
}

async function trail(gw: TestGateway, query = ""): Promise<{ data: Row[]; next_cursor: string | null }> {
  const res = await gw.admin("GET", `/admin/audit${query}`);
  assert.equal(res.status, 200);
  return await res.json();
}

async function call(gw: TestGateway, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await gw.admin(method, path, body, { "user-agent": "audit-test/1" });
  assert.ok(res.status < 300, `${method} ${path} answered ${res.status}`);
  return await res.json();
}

Deno.test("every change through the admin API is recorded newest first: who, from where, what, before and after", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const { token } = await call(gw, "POST", "/admin/tokens", { group: "default", name: "ci" }) as {
    token: { id: string };
  };
  await call(gw, "PATCH", `/admin/tokens/${token.id}`, { limits: { requests_per_minute: 60 } });
  await call(gw, "DELETE", `/admin/tokens/${token.id}`);
  await call(gw, "PATCH", `/admin/tokens/${token.id}`, { disabled: false });
  await call(gw, "POST", "/admin/groups", { name: "team", listing: "openai", models: ["gpt-test"] });
  await call(gw, "PATCH", "/admin/groups/team", { limits: { tokens_per_day: 1000 } });
  await call(gw, "DELETE", "/admin/groups/team");
  const asked = await gw.post("/v1/responses", { model: "claude-test", input: "Hi" }, { "x-api-key": gw.tokens.oa });
  const responseId = (await asked.json()).id as string;
  await call(gw, "DELETE", `/admin/responses/${responseId}`);
  await call(gw, "DELETE", `/admin/tokens/${token.id}/responses`);
  // Reads are not changes.
  await call(gw, "GET", "/admin/tokens");

  const { data } = await trail(gw);
  assert.deepEqual(data.map((r) => [r.action, r.target]), [
    ["response.purge", token.id],
    ["response.delete", responseId],
    ["group.delete", "team"],
    ["group.update", "team"],
    ["group.create", "team"],
    ["token.restore", token.id],
    ["token.revoke", token.id],
    ["token.update", token.id],
    ["token.create", token.id],
  ]);
  for (const row of data) {
    assert.equal(row.actor, "admin key");
    assert.equal(row.via, "api");
    assert.equal(row.ip, "127.0.0.1");
    assert.equal(row.user_agent, "audit-test/1");
    assert.ok(!Number.isNaN(Date.parse(row.time)));
  }
  const byAction = (action: string) => data.find((r) => r.action === action)!;
  assert.equal(byAction("token.create").before, null);
  assert.equal(byAction("token.create").after!.name, "ci");
  assert.equal(byAction("token.update").before!.limits, undefined);
  assert.deepEqual(byAction("token.update").after!.limits, { requests_per_minute: 60 });
  assert.deepEqual([byAction("token.revoke").before!.disabled, byAction("token.revoke").after!.disabled], [
    false,
    true,
  ]);
  assert.deepEqual([byAction("token.restore").before!.disabled, byAction("token.restore").after!.disabled], [
    true,
    false,
  ]);
  assert.deepEqual(byAction("group.update").after!.limits, { tokens_per_day: 1000 });
  assert.equal(byAction("group.delete").after, null);
  assert.deepEqual(byAction("response.purge").after, { deleted: 0 });
});

Deno.test("the recorded ip is the client's as a trusted proxy gives it; X-Forwarded-For from elsewhere is ignored", async () => {
  await using upstream = fakeUpstream();
  const client = { "x-forwarded-for": "203.0.113.9, 127.0.0.1" };
  const names: string[] = [];
  for (const extraYaml of ["trusted_proxies: [127.0.0.1]", ""]) {
    await using gw = await startGateway(upstream.url, { admin: true, extraYaml });
    const name = `via-${extraYaml ? "proxy" : "direct"}`;
    const res = await gw.admin("POST", "/admin/groups", { name, listing: "openai", models: ["gpt-test"] }, client);
    assert.equal(res.status, 201);
    await res.body?.cancel();
    const [row] = (await trail(gw)).data;
    names.push(`${row.target} ${row.ip}`);
  }
  assert.deepEqual(names, ["via-proxy 203.0.113.9", "via-direct 127.0.0.1"]);
});

Deno.test("a change that fails is not recorded", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const bad = await gw.admin("POST", "/admin/tokens", { group: "nope" });
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
  const missing = await gw.admin("DELETE", "/admin/tokens/tok_nope");
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  assert.deepEqual((await trail(gw)).data, []);
});

Deno.test("GET /admin/audit filters by actor, action and since, and pages with next_cursor", async () => {
  await using upstream = fakeUpstream();
  let now = Date.parse("2026-03-05T10:00:00Z");
  await using gw = await startGateway(upstream.url, { admin: true, now: () => new Date(now) });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    ids.push(((await call(gw, "POST", "/admin/tokens", { group: "default" })) as { token: { id: string } }).token.id);
    now += 3_600_000;
  }
  await call(gw, "DELETE", `/admin/tokens/${ids[0]}`);
  assert.deepEqual((await trail(gw, "?action=token.revoke")).data.map((r) => r.target), [ids[0]]);
  assert.equal((await trail(gw, "?actor=admin%20key")).data.length, 6);
  assert.equal((await trail(gw, "?actor=cli")).data.length, 0);
  // Five hours after the first: the last three creations (2 h, 3 h, 4 h in) and the revoke.
  assert.equal((await trail(gw, "?since=3h")).data.length, 4);
  const first = await trail(gw, "?limit=4");
  assert.equal(first.data.length, 4);
  assert.ok(first.next_cursor);
  const second = await trail(gw, `?limit=4&cursor=${encodeURIComponent(first.next_cursor!)}`);
  assert.deepEqual(second.data.map((r) => r.target), [ids[1], ids[0]]);
  assert.equal(second.next_cursor, null);
  for (const [query, param] of [["?cursor=nonsense", "cursor"], ["?action=revoke", "action"], ["?limit=0", "limit"]]) {
    const res = await gw.admin("GET", `/admin/audit${query}`);
    assert.equal(res.status, 400, query);
    assert.equal((await res.json()).error.param, param);
  }
});

Deno.test("changes made in the console are recorded as the admin key via the console, and shown on its audit page", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  const id = (await gw.store.findToken(gw.tokens.default))!.id;
  const res = await post(gw, `/ui/tokens/${id}/revoke`, {}, { cookie, "user-agent": "browser/9" });
  assert.equal(res.status, 303);
  await res.body?.cancel();
  const [row] = (await trail(gw)).data;
  assert.deepEqual([row.actor, row.via, row.action, row.target, row.ip, row.user_agent], [
    "admin key",
    "console",
    "token.revoke",
    id,
    "127.0.0.1",
    "browser/9",
  ]);
  const page = await open(gw, "/ui/audit?action=token.revoke", cookie);
  assert.equal(page.status, 200);
  assert.match(page.text, /token\.revoke/);
  assert.match(page.text, /<code>disabled<\/code>: false → true/);
  assert.ok(page.text.includes(id));
  const none = await open(gw, "/ui/audit?action=group.create", cookie);
  assert.match(none.text, /No change matches these filters/);
});

Deno.test('changes made with the CLI are recorded as "cli", and `audit` lists them', async () => {
  await using upstream = fakeUpstream();
  await using setup = await cliSetup(upstream.url);
  const created = await setup.cli("token create --group default --name laptop");
  assert.equal(created.code, 0);
  const id = (await setup.cli("token list --json")).out.match(/tok_[0-9a-f]+/)![0];
  assert.equal((await setup.cli(`token revoke ${id}`)).code, 0);
  const listed = await setup.cli("audit --json");
  assert.equal(listed.code, 0, listed.err);
  const { data } = JSON.parse(listed.out) as { data: Row[] };
  assert.deepEqual(data.map((r) => [r.actor, r.via, r.action, r.target, r.ip]), [
    ["cli", "cli", "token.revoke", id, null],
    ["cli", "cli", "token.create", id, null],
  ]);
  const text = await setup.cli("audit --action token.revoke");
  assert.equal(text.code, 0);
  assert.match(text.out, /^TIME +ACTOR +VIA +ACTION/);
  assert.match(text.out, /cli +cli +token\.revoke .*disabled: false -> true/);
  assert.doesNotMatch(text.out, /token\.create/);
  await assert.rejects(setup.cli("audit --since yesterday"), /since: /);
  // The secret printed once is in no record.
  assert.ok(!listed.out.includes(created.out.trim()));
});

Deno.test("audit records are kept for audit.days and then expire", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const expiries: (number | undefined)[] = [];
    const watched = new Proxy(kv, {
      get(target, name) {
        if (name === "set") {
          return (key: Deno.KvKey, value: unknown, options?: { expireIn?: number }) => {
            expiries.push(options?.expireIn);
            return target.set(key, value, options);
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const trailOf = auditTrail(watched, { days: 7, writes: createKvWriter({ log: () => {} }) });
    await trailOf.record({ name: "cli", role: "owner", via: "cli" }, {
      time: new Date(),
      action: "token.create",
      target: "t",
    });
    assert.deepEqual(expiries, [7 * 86_400_000]);
  } finally {
    kv.close();
  }
});

Deno.test("no audit record, log line or console page holds a token secret, an operator key or the admin key", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const { secret, token } = await call(gw, "POST", "/admin/tokens", { group: "default", name: "x" }) as {
    secret: string;
    token: { id: string };
  };
  await call(gw, "PATCH", `/admin/tokens/${token.id}`, { name: "y" });
  await call(gw, "DELETE", `/admin/tokens/${token.id}`);
  const { secret: operatorSecret } = await call(gw, "POST", "/admin/operator-keys", { name: "op", role: "admin" }) as {
    secret: string;
  };
  const byOperator = await gw.admin("PATCH", `/admin/tokens/${token.id}`, { name: "z" }, {
    authorization: `Bearer ${operatorSecret}`,
  });
  assert.equal(byOperator.status, 200);
  await byOperator.body?.cancel();
  const cookie = await signIn(gw);
  const everything: string[] = [];
  for await (const entry of gw.store.kv.list({ prefix: ["audit"] })) everything.push(JSON.stringify(entry.value));
  everything.push(JSON.stringify(gw.logs), JSON.stringify(await trail(gw)));
  for (const page of [...PAGES, "/ui/operators", `/ui/tokens/${token.id}`]) {
    const { status, text } = await open(gw, page, cookie);
    assert.equal(status, 200, page);
    everything.push(text);
  }
  const all = everything.join("\n");
  assert.ok(all.includes(token.id) && all.includes("operator_key.create"), "the trail was read");
  for (const secretText of [secret, gw.tokens.default, ADMIN_KEY, operatorSecret]) {
    assert.ok(!all.includes(secretText));
  }
  assert.doesNotMatch(all, /sk-[A-Za-z0-9_-]{20}/);
});

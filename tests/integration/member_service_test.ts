/**
 * @module The admin service scoped to a member, one row per operation: their own tokens only (list, read, create in
 * their token groups with themselves as owner, at most the group's limits and an expiry within the operator's bounds,
 * revoke), their token groups, their own usage and spend; every other operation refused with a 403 naming what is
 * refused.
 */
import assert from "node:assert/strict";
import type { Actor } from "../../src/admin/audit.ts";
import { serviceOf } from "../../src/admin/routes.ts";
import type { AdminService } from "../../src/admin/service.ts";
import type { GatewayError } from "../../src/core/errors.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";

const ALICE = "alice@example.com";
const CAPPED = "  - { name: capped, listing: anthropic, models: [claude-test], limits: { tokens_per_day: 1000 } }";

/** Alice as a member who may mint tokens in "default" and "capped". */
function alice(): Actor {
  return {
    name: ALICE,
    role: "member",
    via: "console",
    email: ALICE,
    token_groups: ["default", "capped"],
  };
}

/** A gateway with a token of Alice's, one of Bob's and the operator's own, each having made one request. */
async function setup(gw: TestGateway) {
  const made = async (owner?: string) => {
    const { secret, record } = await gw.store.createToken({ group: "default", owner });
    const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    return record.id;
  };
  const ids = { alice: await made(ALICE), bob: await made("bob@example.com"), operator: await made() };
  await gw.flush();
  return ids;
}

/** A gateway (with a "capped" group) over a fake upstream that answers, and the service as Alice sees it. */
async function memberGateway() {
  const upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const gw = await startGateway(upstream.url, { admin: true, extraGroups: CAPPED });
  return {
    gw,
    service: serviceOf(gw.deps, alice()),
    async [Symbol.asyncDispose]() {
      await gw[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
    },
  };
}

type Row = [name: keyof AdminService, call: (s: AdminService) => Promise<unknown>, expect: RegExp | "ok"];

Deno.test("a member's service answers for their own tokens and usage, and refuses every other operation", async () => {
  await using at = await memberGateway();
  const { gw, service } = at;
  const ids = await setup(gw);
  const rows: Row[] = [
    ["mayChange", () => Promise.resolve(service.mayChange()), "ok"],
    ["listTokens", (s) => s.listTokens(), "ok"],
    ["getToken", (s) => s.getToken(ids.alice), "ok"],
    ["createToken", (s) => s.createToken({ group: "default", name: "laptop" }), "ok"],
    ["revokeToken", (s) => s.revokeToken(ids.alice), "ok"],
    ["listGroups", (s) => s.listGroups(), "ok"],
    ["getGroup", (s) => s.getGroup("capped"), "ok"],
    ["usage", (s) => s.usage({ by: "token" }), "ok"],
    ["updateToken", (s) => s.updateToken(ids.alice, { name: "x" }), /may not change a token/],
    ["createGroup", (s) => s.createGroup({ name: "g", listing: "openai", models: [] }), /may not create groups/],
    ["updateGroup", (s) => s.updateGroup("default", { listing: "openai" }), /may not change groups/],
    ["deleteGroup", (s) => s.deleteGroup("capped"), /may not delete groups/],
    ["deleteResponse", (s) => s.deleteResponse("resp_1"), /may not delete stored responses/],
    ["purgeResponses", (s) => s.purgeResponses(ids.alice), /may not delete stored responses/],
    ["requests", (s) => s.requests({}), /may not read the request log/],
    ["audit", (s) => s.audit({}), /may not read the audit trail/],
    ["listOperatorKeys", (s) => s.listOperatorKeys(), /may not list operator keys/],
    ["createOperatorKey", (s) => s.createOperatorKey({ name: "x", role: "viewer" }), /may not mint operator keys/],
    ["revokeOperatorKey", (s) => s.revokeOperatorKey("opk_1"), /may not revoke operator keys/],
    ["listPeople", (s) => s.listPeople(), /may not list people/],
    ["getPerson", (s) => s.getPerson("bob@example.com"), /may not read people's roles/],
    ["setPersonRole", (s) => s.setPersonRole("bob@example.com", { role: "admin" }), /may not change people's roles/],
    ["removePerson", (s) => s.removePerson("bob@example.com"), /may not remove people's roles/],
    ["listOAuthGrants", (s) => s.listOAuthGrants(), /may not list the OAuth grants of \/mcp/],
    ["listOAuthClients", (s) => s.listOAuthClients(), /may not list the OAuth clients of \/mcp/],
    ["revokeOAuthGrant", (s) => s.revokeOAuthGrant("oag_0000000000000000"), /may not revoke OAuth grants/],
    ["cancelBatch", (s) => s.cancelBatch("msgbatch_1", () => Promise.resolve("cancelled")), /may not cancel batches/],
  ];
  // Every operation of the service has a row, so one added later must say what a member may do with it.
  assert.deepEqual(rows.map(([name]) => name).sort(), Object.keys(service).sort());
  for (const [name, call, expect] of rows) {
    if (expect === "ok") {
      await call(service);
      continue;
    }
    await assert.rejects(() => call(service), (err: { status?: number; message: string }) => {
      assert.equal(err.status, 403, name);
      assert.match(err.message, /^A member \("alice@example\.com"\) may not /, name);
      assert.match(err.message, expect, name);
      return true;
    });
  }
  // Nothing refused changed anything: the groups are as they were and Bob's and the operator's tokens still work.
  assert.equal((await gw.store.getGroup("default"))!.listing, "anthropic");
  assert.equal((await gw.store.getToken(ids.bob))!.disabled, false);
  assert.equal((await gw.store.getToken(ids.operator))!.disabled, false);
});

Deno.test("a member lists and reads only their own tokens; another's reads as not there", async () => {
  await using at = await memberGateway();
  const { gw, service } = at;
  const ids = await setup(gw);
  assert.deepEqual((await service.listTokens()).map((t) => t.id), [ids.alice]);
  assert.deepEqual((await service.listTokens("default")).map((t) => t.id), [ids.alice]);
  for (const other of [ids.bob, ids.operator]) {
    await assert.rejects(() => service.getToken(other), { status: 404, message: `Token "${other}" does not exist` });
    await assert.rejects(() => service.revokeToken(other), { status: 404 });
    assert.equal((await gw.store.getToken(other))!.disabled, false);
  }
  const revoked = await service.revokeToken(ids.alice);
  assert.equal(revoked.disabled, true);
  assert.deepEqual((await service.listGroups()).map((g) => g.name).sort(), ["capped", "default"]);
  await assert.rejects(() => service.getGroup("oa"), { status: 403, message: /read group "oa"/ });
});

Deno.test("a member creates tokens only in their token groups, owned by them, within the group's limits", async () => {
  await using at = await memberGateway();
  const { gw, service } = at;
  const { token, secret } = await service.createToken({ group: "capped", name: "laptop" });
  assert.equal(token.owner, ALICE, "the owner is the member, though not given");
  assert.match(secret, /^sk-/);
  const trail = (await serviceOf(gw.deps, { name: "admin key", role: "owner", via: "api" }).audit({})).data;
  assert.equal(trail[0].action, "token.create");
  assert.equal(trail[0].actor, ALICE);
  const refusals: [unknown, number, RegExp][] = [
    [{ group: "oa" }, 403, /may not create tokens in group "oa" \(their token groups: "default", "capped"\)/],
    [{ group: "default", owner: "bob@example.com" }, 403, /may not create tokens for someone else/],
    [{ group: "capped", limits: { tokens_per_day: 1001 } }, 400, /at most 1000, the limit of group "capped"/],
    [{ group: "nope" }, 403, /group "nope"/],
  ];
  for (const [input, status, says] of refusals) {
    await assert.rejects(() => service.createToken(input), (err: { status: number; message: string }) => {
      assert.equal(err.status, status, JSON.stringify(input));
      assert.match(err.message, says);
      return true;
    });
  }
  // Their own email (in any case) is no one else; a limit at or below the group's, or one the group lacks, is theirs.
  const own = await service.createToken({ group: "default", owner: "Alice@Example.com" });
  assert.equal(own.token.owner, ALICE);
  const capped = await service.createToken({
    group: "capped",
    limits: { tokens_per_day: 1000, requests_per_minute: 5 },
  });
  assert.deepEqual(capped.token.limits, { tokens_per_day: 1000, requests_per_minute: 5 });
  assert.equal((await gw.store.listTokens()).filter((t) => t.owner === ALICE).length, 3);
});

Deno.test("a member's token expires within auth.personal_tokens: the default when none is asked, later or never refused", async () => {
  await using upstream = fakeUpstream();
  const now = new Date("2031-03-01T12:00:00.000Z");
  await using gw = await startGateway(upstream.url, {
    admin: true,
    now: () => now,
    extraYaml: "auth: { personal_tokens: { default_days: 30, max_days: 60 } }\n",
  });
  const service = serviceOf(gw.deps, alice());
  const day = 86_400_000;
  const at = (days: number) => new Date(now.getTime() + days * day).toISOString();
  assert.equal((await service.createToken({ group: "default" })).token.expires_at, at(30), "the default");
  assert.equal((await service.createToken({ group: "default", expires_at: at(7) })).token.expires_at, at(7));
  assert.equal((await service.createToken({ group: "default", expires_at: at(60) })).token.expires_at, at(60));
  for (const expires_at of [at(60).replace(".000Z", ".001Z"), at(365), null]) {
    await assert.rejects(() => service.createToken({ group: "default", expires_at }), (err: GatewayError) => {
      assert.equal(err.status, 400, String(expires_at));
      assert.equal(err.param, "expires_at");
      assert.match(
        err.message,
        /a member's token must expire within 60 days, by 2031-04-30T12:00:00\.000Z at the latest/,
      );
      return true;
    });
  }
  // An operator's own tokens are theirs to shape: no expiry at all is still allowed.
  const operator = serviceOf(gw.deps, { name: "admin key", role: "owner", via: "api" });
  assert.equal((await operator.createToken({ group: "default", owner: ALICE })).token.expires_at, null);
});

Deno.test("a member sees only their own usage and spend, by token, by owner or by day, never by model", async () => {
  await using at = await memberGateway();
  const { gw, service } = at;
  const ids = await setup(gw);
  assert.deepEqual((await service.usage({ by: "token" })).data.map((r) => r.key), [ids.alice]);
  assert.deepEqual((await service.usage({ by: "owner" })).data.map((r) => r.key), [ALICE]);
  const days = (await service.usage({ by: "day" })).data;
  assert.equal(days.length, 1);
  assert.equal(days[0].requests, 1, "only the member's one request, not all three");
  assert.deepEqual((await service.usage({ by: "owner", name: "bob@example.com" })).data, []);
  for (const by of ["model", "group", "session"]) {
    await assert.rejects(() => service.usage({ by }), { status: 403, message: new RegExp(`see usage by ${by}`) });
  }
});

/** @module The admin API over real HTTP: its key, every bad input it names, tokens, groups and usage end to end. */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { ADMIN_KEY, anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

Deno.test("the admin API is off (404) when MODELGATE_ADMIN_KEY is unset", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const res = await gw.admin("GET", "/admin/tokens");
  assert.equal(res.status, 404);
  assert.equal((await res.json()).error.type, "invalid_request_error");
});

const KEYS: { name: string; headers: Record<string, string>; status: number; says?: RegExp }[] = [
  { name: "missing", headers: { authorization: "" }, status: 401, says: /^Missing admin key/ },
  { name: "wrong", headers: { authorization: "Bearer not-the-admin-key" }, status: 401, says: /^Invalid admin key/ },
  {
    name: "malformed",
    headers: { authorization: `Bearer ${ADMIN_KEY} trailing` },
    status: 401,
    says: /^Malformed Authorization header/,
  },
  { name: "client token", headers: { authorization: "" }, status: 401 },
  { name: "right, as Bearer", headers: {}, status: 200 },
  { name: "right, as x-api-key", headers: { authorization: "", "x-api-key": ADMIN_KEY }, status: 200 },
];

for (const c of KEYS) {
  Deno.test(`the admin API answers ${c.status} to a ${c.name} admin key`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url, { admin: true });
    const headers = c.name === "client token" ? { ...c.headers, "x-api-key": gw.tokens.default } : c.headers;
    const res = await gw.admin("GET", "/admin/tokens", undefined, headers);
    assert.equal(res.status, c.status);
    const body = await res.json();
    if (c.status === 401) assert.equal(body.error.code, "invalid_api_key");
    else assert.equal(body.data.length, 4);
    if (c.says) assert.match(body.error.message, c.says);
  });
}

const BAD: { name: string; method: string; path: string; body?: unknown; param: string; says?: RegExp }[] = [
  { name: "token without group", method: "POST", path: "/admin/tokens", body: {}, param: "group", says: /is required/ },
  { name: "token in an unknown group", method: "POST", path: "/admin/tokens", body: { group: "nope" }, param: "group" },
  {
    name: "negative limit",
    method: "POST",
    path: "/admin/tokens",
    body: { group: "default", limits: { tokens_per_day: -1 } },
    param: "limits.tokens_per_day",
  },
  {
    name: "owner that is no email",
    method: "POST",
    path: "/admin/tokens",
    body: { group: "default", owner: "carol" },
    param: "owner",
    says: /email/,
  },
  {
    name: "unknown limit",
    method: "POST",
    path: "/admin/tokens",
    body: { group: "default", limits: { tokens_per_year: 1 } },
    param: "limits.tokens_per_year",
  },
  {
    name: "unknown field",
    method: "POST",
    path: "/admin/tokens",
    body: { group: "default", colour: 1 },
    param: "colour",
  },
  {
    name: "bad expiry",
    method: "POST",
    path: "/admin/tokens",
    body: { group: "default", expires_at: "tomorrow" },
    param: "expires_at",
  },
  { name: "body not JSON", method: "POST", path: "/admin/tokens", body: "{oops", param: "" },
  { name: "bad disabled", method: "PATCH", path: "/admin/tokens/ID", body: { disabled: "yes" }, param: "disabled" },
  { name: "move to unknown group", method: "PATCH", path: "/admin/tokens/ID", body: { group: "nope" }, param: "group" },
  {
    name: "bad group name",
    method: "POST",
    path: "/admin/groups",
    body: { name: "a b", listing: "openai", models: [] },
    param: "name",
  },
  {
    name: "bad listing",
    method: "POST",
    path: "/admin/groups",
    body: { name: "g", listing: "xml", models: [] },
    param: "listing",
  },
  {
    name: "unserved model",
    method: "POST",
    path: "/admin/groups",
    body: { name: "g", listing: "openai", models: ["gpt-test", "nope"] },
    param: "models[1]",
  },
  { name: "bad usage grouping", method: "GET", path: "/admin/usage?by=colour", param: "by" },
  { name: "bad usage split", method: "GET", path: "/admin/usage?per=hour", param: "per" },
  { name: "bad since", method: "GET", path: "/admin/usage?since=yesterday", param: "since" },
  { name: "zero duration", method: "GET", path: "/admin/usage?since=0d", param: "since" },
  { name: "impossible date", method: "GET", path: "/admin/usage?since=2026-13-45", param: "since" },
  { name: "February 30th", method: "GET", path: "/admin/usage?until=2026-02-30", param: "until" },
  { name: "huge duration", method: "GET", path: "/admin/requests?since=99999999999d", param: "since" },
  { name: "until before since", method: "GET", path: "/admin/usage?since=2026-02-02&until=2026-02-01", param: "until" },
  { name: "zero log limit", method: "GET", path: "/admin/requests?limit=0", param: "limit" },
  { name: "bad status filter", method: "GET", path: "/admin/requests?status=abc", param: "status" },
  { name: "unknown query field", method: "GET", path: "/admin/requests?colour=red", param: "colour" },
];

for (const c of BAD) {
  Deno.test(`the admin API answers 400 naming the field for ${c.name}`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url, { admin: true });
    const id = (await gw.store.listTokens())[0].id;
    const res = await gw.admin(c.method, c.path.replace("ID", id), c.body);
    assert.equal(res.status, 400);
    const { error } = await res.json();
    assert.equal(error.type, "invalid_request_error");
    if (c.param) {
      assert.equal(error.param, c.param);
      assert.ok(error.message.startsWith(`${c.param}: `), error.message);
      if (c.says) assert.match(error.message, c.says);
    } else assert.match(error.message, /not valid JSON/);
  });
}

Deno.test("tokens: create returns the secret once, get and list never do, update applies at once", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const created = await gw.admin("POST", "/admin/tokens", { group: "default", name: "ci" });
  assert.equal(created.status, 201);
  const { token, secret } = await created.json();
  assert.match(secret, /^sk-/);
  assert.equal(token.name, "ci");
  const got = await (await gw.admin("GET", `/admin/tokens/${token.id}`)).text();
  const list = await (await gw.admin("GET", "/admin/tokens?group=default")).text();
  assert.ok(!got.includes(secret) && !list.includes(secret), "a secret was shown again");
  assert.equal(JSON.parse(list).data.length, 2);

  const moved = await gw.admin("PATCH", `/admin/tokens/${token.id}`, {
    group: "oa",
    limits: { requests_per_minute: 9 },
  });
  assert.deepEqual(await moved.json(), { ...token, group: "oa", limits: { requests_per_minute: 9 } });
  const models = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
  assert.equal((await models.json()).object, "list", "the new group's OpenAI listing applies at once");
  const cleared = await (await gw.admin("PATCH", `/admin/tokens/${token.id}`, { limits: null })).json();
  assert.equal(cleared.limits, undefined);

  const expired = await gw.admin("PATCH", `/admin/tokens/${token.id}`, { expires_at: "2020-01-01T00:00:00Z" });
  await expired.body?.cancel();
  const refused = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(refused.status, 401);
  assert.match((await refused.json()).error.message, /expired/);
  const missing = await gw.admin("GET", "/admin/tokens/tok_nope");
  assert.equal(missing.status, 404);
  // Not a model: the code says so (see docs/protocols.md, "Errors").
  assert.equal((await missing.json()).error.code, "not_found");
});

Deno.test("groups: create, update models at once, refuse deleting one in use or one the config defines", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const created = await gw.admin("POST", "/admin/groups", {
    name: "team",
    listing: "anthropic",
    models: ["claude-test"],
  });
  assert.equal(created.status, 201);
  await created.body?.cancel();
  const dup = await gw.admin("POST", "/admin/groups", { name: "team", listing: "anthropic", models: [] });
  assert.equal(dup.status, 409);
  await dup.body?.cancel();
  const { token, secret } = await (await gw.admin("POST", "/admin/tokens", { group: "team" })).json();
  const listed = async () =>
    (await (await fetch(`${gw.url}/v1/models`, { headers: { "x-api-key": secret } })).json()).data.map((
      m: { id: string },
    ) => m.id);
  assert.deepEqual(await listed(), ["claude-test"]);
  const updated = await gw.admin("PATCH", "/admin/groups/team", { models: ["claude-test", "gpt-test"] });
  assert.equal(updated.status, 200);
  await updated.body?.cancel();
  assert.deepEqual(await listed(), ["claude-test", "gpt-test"]);

  const inUse = await gw.admin("DELETE", "/admin/groups/team");
  assert.equal(inUse.status, 409);
  assert.match((await inUse.json()).error.message, /used by 1 token/);
  const configGroup = await gw.admin("PATCH", "/admin/groups/default", { models: [] });
  assert.equal(configGroup.status, 409);
  assert.match((await configGroup.json()).error.message, /config file/);
  await (await gw.admin("DELETE", `/admin/tokens/${token.id}`)).body?.cancel();
  const deleted = await gw.admin("DELETE", "/admin/groups/team");
  assert.deepEqual(await deleted.json(), { deleted: "team" });
  const names = (await (await gw.admin("GET", "/admin/groups")).json()).data.map((g: { name: string }) => g.name);
  assert.ok(!names.includes("team"));
});

Deno.test("end to end: create a token through the admin API, use it, read its usage back, revoke it", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const { token, secret } = await (await gw.admin("POST", "/admin/tokens", { group: "default", name: "alice" })).json();
  for (const session of ["s-1", "s-1", "s-2"]) {
    const res = await gw.post("/v1/messages", messagesBody(), {
      "x-api-key": secret,
      "x-claude-code-session-id": session,
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  await gw.flush();
  const byToken = await (await gw.admin("GET", `/admin/usage?by=token&since=1d&name=${token.id}`)).json();
  assert.equal(byToken.by, "token");
  assert.deepEqual(
    byToken.data.map((r: Record<string, unknown>) => [r.key, r.requests, r.input_tokens, r.output_tokens]),
    [[token.id, 3, 15, 6]],
  );
  const bySession = await (await gw.admin("GET", "/admin/usage?by=session")).json();
  assert.deepEqual(bySession.data.map((r: Record<string, unknown>) => [r.key, r.requests]), [["s-1", 2], ["s-2", 1]]);
  const perDay = await (await gw.admin("GET", "/admin/usage?by=session&since=1d&per=day")).json();
  // The UTC day the requests were recorded on (the clock may pass midnight during the test).
  const today = (await (await gw.admin("GET", "/admin/requests?limit=1")).json()).data[0].time.slice(0, 10);
  assert.deepEqual(perDay.data.map((r: Record<string, unknown>) => [r.day, r.key, r.requests]), [
    [today, "s-1", 2],
    [today, "s-2", 1],
  ]);
  const log = await (await gw.admin("GET", `/admin/requests?token=${token.id}&session=s-2`)).json();
  assert.equal(log.data.length, 1);
  assert.equal(log.data[0].session_id, "s-2");

  const revoked = await gw.admin("DELETE", `/admin/tokens/${token.id}`);
  assert.equal((await revoked.json()).disabled, true);
  const after = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(after.status, 401);
  await after.body?.cancel();
});

Deno.test("stored responses: delete one whoever made it, or purge a token's all", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const ask = async (secret: string) => {
    const res = await gw.post("/v1/responses", { model: "claude-test", input: "Hi" }, { "x-api-key": secret });
    return (await res.json()).id as string;
  };
  const stored = async (secret: string, id: string) => {
    const res = await fetch(`${gw.url}/v1/responses/${id}`, { headers: { "x-api-key": secret } });
    await res.body?.cancel();
    return res.status === 200;
  };
  const [one, two, other] = [await ask(gw.tokens.oa), await ask(gw.tokens.oa), await ask(gw.tokens.auto)];
  const tokenId = (await gw.store.findToken(gw.tokens.oa))!.id;
  const deleted = await gw.admin("DELETE", `/admin/responses/${one}`);
  assert.deepEqual(await deleted.json(), { id: one, object: "response", deleted: true, token: tokenId });
  const again = await gw.admin("DELETE", `/admin/responses/${one}`);
  assert.equal(again.status, 404);
  await again.body?.cancel();
  const purged = await gw.admin("DELETE", `/admin/tokens/${tokenId}/responses`);
  assert.deepEqual(await purged.json(), { token: tokenId, deleted: 1 });
  assert.deepEqual([await stored(gw.tokens.oa, two), await stored(gw.tokens.auto, other)], [false, true]);
  const unknown = await gw.admin("DELETE", "/admin/tokens/tok_nope/responses");
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
});

Deno.test("a day that just ended is read afresh until its last requests can no longer be written", async () => {
  await using upstream = fakeUpstream();
  let now = Date.parse("2026-03-05T00:10:00Z");
  await using gw = await startGateway(upstream.url, { admin: true, now: () => new Date(now) });
  const key = ["usage", "token", "2026-03-04", "tok_late", "requests"];
  const read = async () => {
    const body = await (await gw.admin("GET", "/admin/usage?by=token&since=2026-03-04&until=2026-03-04")).json();
    return body.data.map((row: { key: string; requests: number }) => [row.key, row.requests]);
  };
  await gw.store.kv.atomic().sum(key, 1n).commit();
  assert.deepEqual(await read(), [["tok_late", 1]]);
  // A stream that started before midnight ends now and is recorded under yesterday.
  await gw.store.kv.atomic().sum(key, 1n).commit();
  assert.deepEqual(await read(), [["tok_late", 2]]);
  // Hours later the day is closed: read once more from KV, then kept.
  now += 3 * 3_600_000;
  assert.deepEqual(await read(), [["tok_late", 2]]);
});

Deno.test("a token made for a person keeps its owner, lower-cased, and a token made without one has none", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const made = await (await gw.admin("POST", "/admin/tokens", { group: "default", owner: "Carol@Example.com" })).json();
  assert.equal(made.token.owner, "carol@example.com");
  assert.equal((await (await gw.admin("GET", `/admin/tokens/${made.token.id}`)).json()).owner, "carol@example.com");
  const plain = await (await gw.admin("POST", "/admin/tokens", { group: "default" })).json();
  assert.equal("owner" in plain.token, false);
});

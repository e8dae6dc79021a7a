/** @module Auth on /v1 routes: both headers, and every way a token can fail, in each route's error shape. */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

Deno.test("messages accept x-api-key and Authorization: Bearer", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const variants: Record<string, string>[] = [
    { "x-api-key": gw.tokens.default },
    { "x-api-key": "", authorization: `Bearer ${gw.tokens.default}` },
  ];
  for (const headers of variants) {
    const res = await gw.post("/v1/messages", messagesBody(), headers);
    assert.equal(res.status, 200);
    assert.equal((await res.json()).content[0].text, "Hello");
  }
});

const FAILURES: { name: string; headers: Record<string, string>; message: RegExp }[] = [
  { name: "missing", headers: { "x-api-key": "" }, message: /Missing API key/ },
  { name: "unknown", headers: { "x-api-key": "sk-not-a-real-token" }, message: /Invalid API key/ },
  { name: "not sk-", headers: { "x-api-key": "", authorization: "Bearer abc" }, message: /Invalid API key/ },
  {
    name: "bearer with trailing text",
    headers: { "x-api-key": "", authorization: "Bearer sk-abc extra" },
    message: /^Malformed Authorization header/,
  },
  { name: "non-bearer", headers: { "x-api-key": "", authorization: "Basic dXNlcjpwYXNz" }, message: /^Malformed/ },
];

for (const c of FAILURES) {
  Deno.test(`messages answer 401 authentication_error for a ${c.name} token`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url);
    const res = await gw.post("/v1/messages", messagesBody(), c.headers);
    assert.equal(res.status, 401);
    const body = await res.json();
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "authentication_error");
    assert.match(body.error.message, c.message);
    assert.equal(upstream.requests.length, 0);
  });
}

Deno.test("a revoked token stops working at once on a running server, and says it is disabled", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const { secret, record } = await gw.store.createToken({ group: "default" });
  const first = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(first.status, 200);
  await first.body?.cancel();
  await gw.store.revokeToken(record.id);
  const second = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(second.status, 401);
  assert.equal((await second.json()).error.message, "API key is disabled");
});

Deno.test("an expired token answers 401", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const { secret } = await gw.store.createToken({ group: "default", expiresAt: new Date(Date.now() - 1000) });
  const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(res.status, 401);
  assert.match((await res.json()).error.message, /expired/);
});

Deno.test("a token that expires at exactly the gateway's now is refused; one a millisecond later is not", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const now = new Date("2026-11-22T12:00:00.000Z");
  await using gw = await startGateway(upstream.url, { now: () => now });
  const ending = await gw.store.createToken({ group: "default", expiresAt: now, now });
  const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": ending.secret });
  assert.equal(res.status, 401);
  assert.equal((await res.json()).error.message, "API key has expired");
  const later = await gw.store.createToken({ group: "default", expiresAt: new Date(now.getTime() + 1), now });
  const live = await gw.post("/v1/messages", messagesBody(), { "x-api-key": later.secret });
  assert.equal(live.status, 200);
  await live.body?.cancel();
  assert.equal(upstream.requests.length, 1, "only the live token's request went upstream");
});

Deno.test("a token whose group was deleted answers 403 permission_error in each route's shape, as documented", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  await gw.store.putGroup({ name: "gone", listing: "openai", models: ["gpt-test"] });
  const { secret } = await gw.store.createToken({ group: "gone" });
  await gw.store.deleteGroup("gone");
  const messages = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(messages.status, 403);
  assert.deepEqual((await messages.json()).error, {
    type: "permission_error",
    message: `API key's group "gone" no longer exists`,
  });
  const chat = await gw.post("/v1/chat/completions", { model: "gpt-test", messages: [] }, {
    "x-api-key": "",
    authorization: `Bearer ${secret}`,
  });
  assert.equal(chat.status, 403);
  assert.equal((await chat.json()).error.type, "permission_error");
  const table = Deno.readTextFileSync(new URL("../../docs/clients.md", import.meta.url));
  assert.match(table, /^\| 403 +\| `permission_error` +\| the token's group no longer exists/m);
});

Deno.test("models answer 401 in the OpenAI shape for Bearer and the Anthropic shape for x-api-key", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const bearer = await fetch(`${gw.url}/v1/models`, { headers: { authorization: "Bearer sk-nope" } });
  assert.equal(bearer.status, 401);
  assert.deepEqual((await bearer.json()).error.code, "invalid_api_key");
  const apiKey = await fetch(`${gw.url}/v1/models`, { headers: { "x-api-key": "sk-nope" } });
  assert.equal(apiKey.status, 401);
  assert.equal((await apiKey.json()).error.type, "authentication_error");
  const versioned = await fetch(`${gw.url}/v1/models`, { headers: { "anthropic-version": "2023-06-01" } });
  assert.equal(versioned.status, 401);
  assert.equal((await versioned.json()).type, "error");
});

// KV's version counter is a bigint, which JSON.stringify refuses.
const bigints = (_key: string, value: unknown) => typeof value === "bigint" ? String(value) : value;

Deno.test("tokens are stored only as hashes", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const dump: string[] = [];
  for await (const entry of gw.store.kv.list({ prefix: [] })) {
    dump.push(JSON.stringify([entry.key, entry.value], bigints));
  }
  for (const secret of Object.values(gw.tokens)) {
    assert.match(secret, /^sk-[A-Za-z0-9_-]{43}$/);
    assert.ok(!dump.join("\n").includes(secret.slice(3)), "a secret is stored in KV");
  }
});

Deno.test("a known token is served from the instance's cache, not read from KV per request", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const { secret } = await gw.store.createToken({ group: "default" });
  await (await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret })).body?.cancel();
  // Removing the record behind the store's back (no version bump) is invisible to a cached token.
  for await (const entry of gw.store.kv.list({ prefix: ["token_hash"] })) await gw.store.kv.delete(entry.key);
  const cached = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(cached.status, 200);
  await cached.body?.cancel();
  const unseen = await gw.post("/v1/messages", messagesBody(), { "x-api-key": gw.tokens.oa });
  assert.equal(unseen.status, 401, "a token never seen before is read from KV");
  await unseen.body?.cancel();
});

Deno.test("a revocation or group change made by another instance sharing the KV applies within a second", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const kv = await Deno.openKv(":memory:");
  try {
    await using writer = await startGateway(upstream.url, { kv });
    await using reader = await startGateway(upstream.url, { kv });
    const { secret, record } = await writer.store.createToken({ group: "default" });
    const first = await reader.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(first.status, 200);
    await first.body?.cancel();

    const before = await fetch(`${reader.url}/v1/models`, { headers: { "x-api-key": secret } });
    assert.ok((await before.json()).data.some((m: { id: string }) => m.id === "claude-test"));
    const group = await writer.store.getGroup("default");
    await writer.store.putGroup({ ...group!, models: ["gpt-test"] });
    let started = Date.now();
    await reader.deps.operator.credentials.refreshed();
    const after = await fetch(`${reader.url}/v1/models`, { headers: { "x-api-key": secret } });
    assert.deepEqual((await after.json()).data.map((m: { id: string }) => m.id), ["gpt-test"]);
    assert.ok(Date.now() - started < 1000, "the group change took a second or more");

    await writer.store.revokeToken(record.id);
    started = Date.now();
    await reader.deps.operator.credentials.refreshed();
    const revoked = await reader.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(revoked.status, 401);
    assert.match((await revoked.json()).error.message, /disabled/);
    assert.ok(Date.now() - started < 1000, "the revocation took a second or more");
  } finally {
    kv.close();
  }
});

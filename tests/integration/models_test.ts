/** @module GET /v1/models and /v1/models/{id}: group shapes, pagination and errors. */
import assert from "node:assert/strict";
import { fakeUpstream } from "../_fake_upstream.ts";
import { BULK_MODELS, startGateway, type TestGateway } from "../_helpers.ts";

function get(gw: TestGateway, path: string, headers: HeadersInit): Promise<Response> {
  return fetch(`${gw.url}${path}`, { headers });
}

Deno.test("an anthropic group lists exactly its models in the Anthropic shape", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const res = await get(gw, "/v1/models", { "x-api-key": gw.tokens.default });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = await res.json();
  assert.deepEqual(body.data.map((m: { id: string }) => m.id), [
    "claude-test",
    "alias",
    "claude-nokey",
    "gpt-test",
    "claude-ha",
  ]);
  assert.deepEqual(body.data[1], {
    id: "alias",
    type: "model",
    display_name: "Alias of claude-test",
    created_at: "2026-01-02T03:04:05.000Z",
  });
  assert.match(body.data[0].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(body.has_more, false);
  assert.equal(body.first_id, "claude-test");
  assert.equal(body.last_id, "claude-ha");
  assert.equal(upstream.requests.length, 0);
});

Deno.test("an openai group lists its models in the OpenAI shape", async () => {
  await using upstream = fakeUpstream();
  const started = new Date("2026-03-01T10:00:00Z");
  await using gw = await startGateway(upstream.url, { now: () => started });
  const res = await get(gw, "/v1/models", { authorization: `Bearer ${gw.tokens.oa}` });
  const body = await res.json();
  assert.equal(body.object, "list");
  const created = started.getTime() / 1000;
  assert.deepEqual(body.data, [
    { id: "gpt-test", object: "model", created, owned_by: "oai" },
    { id: "claude-test", object: "model", created, owned_by: "anth" },
    { id: "gpt-ha", object: "model", created, owned_by: "hb1" },
  ]);
});

Deno.test("a model without a configured date is listed from when the gateway first served it, kept across restarts", async () => {
  await using upstream = fakeUpstream();
  using kv = await Deno.openKv(":memory:");
  const listed = async (now: Date) => {
    await using gw = await startGateway(upstream.url, { kv, now: () => now });
    const anthropic = await (await get(gw, "/v1/models/claude-test", { "x-api-key": gw.tokens.default })).json();
    const openai = await (await get(gw, "/v1/models/gpt-test", { authorization: `Bearer ${gw.tokens.oa}` })).json();
    return { anthropic: anthropic.created_at, openai: openai.created };
  };
  const first = await listed(new Date("2026-03-01T10:00:00Z"));
  assert.deepEqual(first, { anthropic: "2026-03-01T10:00:00.000Z", openai: 1772359200 });
  // A restart a month later, on the same KV (as is a second instance): the dates stay.
  assert.deepEqual(await listed(new Date("2026-04-01T10:00:00Z")), first);
});

Deno.test("an auto group answers in the Anthropic shape only when anthropic-version is sent", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const plain = await (await get(gw, "/v1/models", { authorization: `Bearer ${gw.tokens.auto}` })).json();
  assert.equal(plain.object, "list");
  const versioned = await get(gw, "/v1/models", {
    authorization: `Bearer ${gw.tokens.auto}`,
    "anthropic-version": "2023-06-01",
  });
  const body = await versioned.json();
  assert.equal(body.data[0].type, "model");
  assert.equal(body.has_more, false);
});

const PAGES = [
  { query: "", ids: BULK_MODELS.slice(0, 20), hasMore: true },
  { query: "?limit=5&after_id=bulk-04", ids: BULK_MODELS.slice(5, 10), hasMore: true },
  { query: "?limit=20&after_id=bulk-39", ids: BULK_MODELS.slice(40), hasMore: false },
  { query: "?limit=5&before_id=bulk-10", ids: BULK_MODELS.slice(5, 10), hasMore: true },
  { query: "?limit=5&before_id=bulk-03", ids: BULK_MODELS.slice(0, 3), hasMore: false },
  { query: "?limit=1000", ids: BULK_MODELS, hasMore: false },
];

for (const c of PAGES) {
  Deno.test(`the Anthropic listing pages with "${c.query}"`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url);
    const body = await (await get(gw, `/v1/models${c.query}`, { "x-api-key": gw.tokens.bulk })).json();
    assert.deepEqual(body.data.map((m: { id: string }) => m.id), c.ids);
    assert.equal(body.has_more, c.hasMore);
    assert.equal(body.first_id, c.ids[0]);
    assert.equal(body.last_id, c.ids.at(-1));
  });
}

const BAD_QUERIES = [
  { query: "?limit=0", param: "limit" },
  { query: "?limit=1001", param: "limit" },
  { query: "?limit=abc", param: "limit" },
  { query: "?after_id=nope", param: "after_id" },
  { query: "?before_id=nope", param: "before_id" },
];

for (const c of BAD_QUERIES) {
  Deno.test(`the Anthropic listing answers 400 naming ${c.param} for "${c.query}"`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url);
    const res = await get(gw, `/v1/models${c.query}`, { "x-api-key": gw.tokens.bulk });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.type, "invalid_request_error");
    assert.match(body.error.message, new RegExp(`^${c.param}:`));
  });
}

Deno.test("GET /v1/models/{id} answers one entry, and 404 outside the group, in the group's shape", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const one = await get(gw, "/v1/models/alias?beta=true", { "x-api-key": gw.tokens.default });
  assert.equal(one.status, 200);
  assert.equal((await one.json()).display_name, "Alias of claude-test");
  const missing = await get(gw, "/v1/models/bulk-01", { "x-api-key": gw.tokens.default });
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.type, "not_found_error");
  const openai = await get(gw, "/v1/models/alias", { authorization: `Bearer ${gw.tokens.oa}` });
  assert.equal(openai.status, 404);
  assert.equal((await openai.json()).error.code, "model_not_found");
  const openaiOne = await get(gw, "/v1/models/gpt-test", { authorization: `Bearer ${gw.tokens.oa}` });
  assert.equal((await openaiOne.json()).object, "model");
});

Deno.test("/v1/v1/models is served as /v1/models", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const res = await get(gw, "/v1/v1/models", { "x-api-key": gw.tokens.default });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).data.length, 5);
});

Deno.test("unknown paths answer 404 in the Anthropic shape under /v1/messages and OpenAI's elsewhere", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const messages = await fetch(`${gw.url}/v1/messages/nowhere`, { method: "POST" });
  assert.equal(messages.status, 404);
  assert.equal((await messages.json()).error.type, "not_found_error");
  const other = await fetch(`${gw.url}/v1/nowhere`, { method: "POST" });
  assert.equal(other.status, 404);
  assert.equal((await other.json()).error.type, "invalid_request_error");
  const wrongMethod = await fetch(`${gw.url}/v1/messages`);
  assert.equal(wrongMethod.status, 405);
  assert.equal((await wrongMethod.json()).type, "error");
});

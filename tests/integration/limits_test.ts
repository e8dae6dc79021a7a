/** @module Limits over real HTTP: each kind, token and group scope, both error shapes, and parallel racers. */
import assert from "node:assert/strict";
import { estimateRequestTokens } from "../../src/access/limits.ts";
import type { Limits } from "../../src/core/config.ts";
import { requestLog } from "../../src/usage/query.ts";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { anthropicMessage, limitCounter, messagesBody, readText, startGateway, waitFor } from "../_helpers.ts";

/** Every answer uses 30 tokens; a messagesBody() request is estimated at about 27 before the call. */
function thirtyTokens() {
  return jsonReply({
    ...anthropicMessage(),
    usage: { ...anthropicMessage().usage as object, input_tokens: 20, output_tokens: 10 },
  });
}

/** A clock frozen mid-minute, so no window rolls over during a test. */
function frozenClock(): () => Date {
  const now = Date.now();
  const at = now - (now % 60_000) + 30_000;
  return () => new Date(at);
}

const KINDS: { field: keyof Limits; limit: number; unit: string }[] = [
  { field: "requests_per_minute", limit: 1, unit: "requests" },
  { field: "tokens_per_minute", limit: 40, unit: "tokens" },
  { field: "tokens_per_day", limit: 40, unit: "tokens" },
  { field: "tokens_per_month", limit: 40, unit: "tokens" },
];

for (const c of KINDS) {
  Deno.test(`a token's ${c.field} refuses the request that would pass it with a 429 and rate-limit headers`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /anth/v1/messages", thirtyTokens);
    await using gw = await startGateway(upstream.url, { now: frozenClock() });
    const { secret, record } = await gw.store.createToken({ group: "default" });
    await gw.store.updateToken(record.id, { limits: { [c.field]: c.limit } });
    const first = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(first.status, 200);
    await first.body?.cancel();
    await gw.deps.operator.limiter.settled();
    const second = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(second.status, 429);
    const body = await second.json();
    assert.equal(body.error.type, "rate_limit_error");
    assert.match(body.error.message, new RegExp(`${c.field} = ${c.limit}`));
    assert.match(second.headers.get("retry-after") ?? "", /^\d+$/);
    // Beyond a minute a retry cannot succeed, and the Anthropic SDK would sleep out the whole retry-after.
    assert.equal(second.headers.get("x-should-retry"), c.field.endsWith("minute") ? null : "false");
    assert.equal(second.headers.get(`anthropic-ratelimit-${c.unit}-limit`), String(c.limit));
    assert.match(second.headers.get(`anthropic-ratelimit-${c.unit}-reset`) ?? "", /^\d{4}-\d{2}-\d{2}T.*Z$/);
    assert.equal(upstream.requests.length, 1);
    const other = await gw.post("/v1/messages", messagesBody());
    assert.equal(other.status, 200, "another token of the same group is not limited");
    await other.body?.cancel();
  });
}

Deno.test("a group's limits from the YAML config apply to all its tokens, in OpenAI's shape for OpenAI clients", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    () => jsonReply({ id: "c", object: "chat.completion", choices: [] }),
  );
  const extraGroups = "  - { name: capped, listing: openai, models: [gpt-test], limits: { requests_per_minute: 2 } }";
  await using gw = await startGateway(upstream.url, { extraGroups, now: frozenClock() });
  const a = (await gw.store.createToken({ group: "capped" })).secret;
  const b = (await gw.store.createToken({ group: "capped" })).secret;
  const chat = { model: "gpt-test", messages: [{ role: "user", content: "Hi" }] };
  const statuses: number[] = [];
  for (const secret of [a, b, a]) {
    const res = await gw.post("/v1/chat/completions", chat, { "x-api-key": "", authorization: `Bearer ${secret}` });
    statuses.push(res.status);
    if (res.status !== 429) {
      await res.body?.cancel();
      continue;
    }
    const body = await res.json();
    assert.deepEqual([body.error.type, body.error.code], ["rate_limit_error", "rate_limit_exceeded"]);
    assert.match(body.error.message, /Group "capped"/);
    assert.equal(res.headers.get("x-ratelimit-limit-requests"), "2");
    assert.equal(res.headers.get("x-ratelimit-remaining-requests"), "0");
  }
  assert.deepEqual(statuses, [200, 200, 429]);
});

Deno.test("parallel requests on two instances sharing the KV never pass a requests-per-minute limit", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const kv = await Deno.openKv(":memory:");
  try {
    const now = frozenClock();
    await using one = await startGateway(upstream.url, { kv, now });
    await using two = await startGateway(upstream.url, { kv, now });
    const { secret, record } = await one.store.createToken({ group: "default" });
    await one.store.updateToken(record.id, { limits: { requests_per_minute: 5 } });
    const responses = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) => (i % 2 ? one : two).post("/v1/messages", messagesBody(), { "x-api-key": secret }),
      ),
    );
    for (const res of responses) await res.body?.cancel();
    assert.equal(responses.filter((res) => res.status === 200).length, 5);
    assert.equal(responses.filter((res) => res.status === 429).length, 15);
    assert.equal(upstream.requests.length, 5);
  } finally {
    kv.close();
  }
});

Deno.test("parallel requests racing a token budget use at most the budget plus one request", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", thirtyTokens);
  await using gw = await startGateway(upstream.url, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_day: 100 } });
  const responses = await Promise.all(
    Array.from({ length: 10 }, () => gw.post("/v1/messages", messagesBody(), { "x-api-key": secret })),
  );
  for (const res of responses) await res.body?.cancel();
  const admitted = responses.filter((res) => res.status === 200).length;
  assert.ok(admitted >= 1 && admitted * 30 <= 100 + 30, `${admitted} requests of 30 tokens passed a budget of 100`);
  await gw.deps.operator.limiter.settled();
  const day = gw.deps.now().toISOString().slice(0, 10);
  const charged = await limitCounter(gw.store.kv, ["limit", "token", record.id, "tokens", "day", day]);
  assert.equal(charged, BigInt(admitted * 30), "the budget is charged with the real usage, not the estimate");
  const after = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(after.status, 429);
  assert.equal(after.headers.get("anthropic-ratelimit-tokens-remaining"), String(100 - admitted * 30));
  await after.body?.cancel();
});

Deno.test("a request that fails upstream gives its token estimate back", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => jsonReply({ type: "error", error: { type: "invalid_request_error", message: "no" } }, 400),
  );
  await using gw = await startGateway(upstream.url, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_day: 1000 } });
  const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(res.status, 400);
  await res.body?.cancel();
  await gw.deps.operator.limiter.settled();
  const day = gw.deps.now().toISOString().slice(0, 10);
  assert.equal(await limitCounter(gw.store.kv, ["limit", "token", record.id, "tokens", "day", day]), 0n);
});

Deno.test("count_tokens is neither limited nor recorded", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages/count_tokens", () => jsonReply({ input_tokens: 3 }));
  await using gw = await startGateway(upstream.url, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { requests_per_minute: 1, tokens_per_day: 1 } });
  for (let i = 0; i < 3; i++) {
    const res = await gw.post("/v1/messages/count_tokens", {
      model: "claude-test",
      messages: [{ role: "user", content: "Hi" }],
    }, {
      "x-api-key": secret,
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  await gw.flush();
  assert.deepEqual(await requestLog(gw.store.kv, { limit: 10 }), []);
});

Deno.test("a delivered stream whose usage is unknown keeps its estimate charged", async () => {
  await using upstream = fakeUpstream();
  const chunk = {
    id: "c",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: "stop" }],
  };
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    () => sseReply(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`),
  );
  await using gw = await startGateway(upstream.url, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "oa" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_day: 100000 } });
  const body = { model: "gpt-test", messages: [{ role: "user", content: "Hi" }], max_tokens: 50, stream: true };
  const res = await gw.post("/v1/chat/completions", body, { "x-api-key": "", authorization: `Bearer ${secret}` });
  assert.equal(res.status, 200);
  await readText(res);
  await gw.deps.operator.limiter.settled();
  const day = gw.deps.now().toISOString().slice(0, 10);
  const charged = await limitCounter(gw.store.kv, ["limit", "token", record.id, "tokens", "day", day]);
  assert.equal(charged, BigInt(estimateRequestTokens(body)));
});

Deno.test("two requests sharing a client's x-request-id are each charged their own real usage", async () => {
  await using upstream = fakeUpstream();
  const gates = { small: Promise.withResolvers<void>(), large: Promise.withResolvers<void>() };
  upstream.routes.set("POST /anth/v1/messages", async (seen) => {
    const large = seen.body?.max_tokens === 4000;
    // Both are admitted before either answers; the small one (admitted first) finishes first.
    await (large ? gates.large : gates.small).promise;
    return jsonReply({ ...anthropicMessage(), usage: { input_tokens: 20, output_tokens: large ? 4000 : 10 } });
  });
  await using gw = await startGateway(upstream.url, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_day: 5000 } });
  const headers = { "x-api-key": secret, "x-request-id": "shared-id" };
  const small = gw.post("/v1/messages", messagesBody(), headers);
  await waitFor(() => upstream.requests[0]);
  const large = gw.post("/v1/messages", messagesBody({ max_tokens: 4000 }), headers);
  await waitFor(() => upstream.requests[1]);
  gates.small.resolve();
  await (await small).body?.cancel();
  await gw.deps.operator.limiter.settled();
  gates.large.resolve();
  await (await large).body?.cancel();
  await gw.deps.operator.limiter.settled();
  // 4,050 tokens are spent; a request estimated at over 1,000 more must not fit in 5,000.
  const over = await gw.post("/v1/messages", messagesBody({ max_tokens: 1500 }), { "x-api-key": secret });
  assert.equal(over.status, 429);
  await over.body?.cancel();
});

Deno.test("an idle window admits one request whatever its estimate, and the next is refused", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", thirtyTokens);
  await using gw = await startGateway(upstream.url, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_minute: 100 } });
  const first = await gw.post("/v1/messages", messagesBody({ max_tokens: 5000 }), { "x-api-key": secret });
  assert.equal(first.status, 200, "an estimate above the limit alone never refuses a request for good");
  await first.body?.cancel();
  await gw.deps.operator.limiter.settled();
  const second = await gw.post("/v1/messages", messagesBody({ max_tokens: 90 }), { "x-api-key": secret });
  assert.equal(second.status, 429);
  await second.body?.cancel();
});

Deno.test("after an idle window admits one oversize request, the remaining headers say 0 in both shapes, never less", async () => {
  await using upstream = fakeUpstream();
  // The one request the idle window admits uses fifty times the limit.
  upstream.routes.set("POST /anth/v1/messages", () =>
    jsonReply({
      ...anthropicMessage(),
      usage: { ...anthropicMessage().usage as object, input_tokens: 20, output_tokens: 4980 },
    }));
  await using gw = await startGateway(upstream.url, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_minute: 100 } });
  const first = await gw.post("/v1/messages", messagesBody({ max_tokens: 5000 }), { "x-api-key": secret });
  assert.equal(first.status, 200);
  await first.body?.cancel();
  await gw.deps.operator.limiter.settled();
  const anthropic = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(anthropic.status, 429);
  await anthropic.body?.cancel();
  assert.equal(anthropic.headers.get("anthropic-ratelimit-tokens-limit"), "100");
  assert.equal(anthropic.headers.get("anthropic-ratelimit-tokens-remaining"), "0");
  const chat = { model: "gpt-test", max_tokens: 10, messages: [{ role: "user", content: "Hi" }] };
  const openai = await gw.post("/v1/chat/completions", chat, { "x-api-key": "", authorization: `Bearer ${secret}` });
  assert.equal(openai.status, 429);
  await openai.body?.cancel();
  assert.equal(openai.headers.get("x-ratelimit-limit-tokens"), "100");
  assert.equal(openai.headers.get("x-ratelimit-remaining-tokens"), "0");
  assert.equal(upstream.requests.length, 1);
});

/**
 * @module Budgets in money over real HTTP: a token's and a group's budget admit requests until spent and then
 * answer 429 in the client's protocol; the estimate is replaced by the real cost; two instances share one budget;
 * a request that ends past the budget or past midnight is charged where it was admitted.
 */
import assert from "node:assert/strict";
import { estimateRequest } from "../../src/access/limits.ts";
import { formatMoney } from "../../src/core/money.ts";
import { costOf } from "../../src/usage/cost.ts";
import { controlledStream, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, firstEvent, fixture, limitCounter, messagesBody, readText } from "../_helpers.ts";
import { answerWithCacheUsage, ANTHROPIC_CACHE_COST, spendGateway } from "../_spend.ts";

const CLAUDE_PRICE = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

/** Seconds from `at` to the next UTC midnight, rounded up: a day budget's retry-after. */
function toMidnight(at: Date): number {
  const end = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1);
  return Math.ceil((end - at.getTime()) / 1000);
}

Deno.test("a cost_per_day budget admits requests until spent, then 429 in both client protocols", async () => {
  await using upstream = fakeUpstream();
  answerWithCacheUsage(upstream);
  await using gw = await spendGateway(upstream);
  const { secret, record } = await gw.store.createToken({ group: "spend" });
  // Three answers of 0.000189 spend the budget exactly; each is estimated at less (its max_tokens is 1).
  await gw.store.updateToken(record.id, { limits: { cost_per_day: 0.000567 } });
  const headers = { "x-api-key": secret };
  for (let i = 0; i < 3; i++) {
    const body = messagesBody({ model: "claude-priced", max_tokens: 1, stream: i === 1 });
    const res = await gw.post("/v1/messages", body, headers);
    assert.equal(res.status, 200);
    await readText(res);
    await gw.deps.operator.limiter.settled();
  }
  const anthropic = await gw.post("/v1/messages", messagesBody({ model: "claude-priced" }), headers);
  assert.equal(anthropic.status, 429);
  const body = await anthropic.json();
  assert.deepEqual([body.type, body.error.type], ["error", "rate_limit_error"]);
  assert.match(body.error.message, new RegExp(`API key "${record.id}" is over its budget cost_per_day = 0.000567 USD`));
  assert.equal(anthropic.headers.get("retry-after"), String(toMidnight(gw.deps.now())));
  assert.equal(anthropic.headers.get("x-should-retry"), "false", "an SDK must not sleep until midnight");

  const chat = { model: "gpt-priced", stream: true, messages: [{ role: "user", content: "Hi" }] };
  const openai = await gw.post("/v1/chat/completions", chat, { "x-api-key": "", authorization: `Bearer ${secret}` });
  assert.equal(openai.status, 429);
  const error = (await openai.json()).error;
  assert.deepEqual([error.type, error.code], ["rate_limit_error", "rate_limit_exceeded"]);
  assert.match(error.message, /cost_per_day = 0\.000567 USD/);
  assert.equal(openai.headers.get("retry-after"), String(toMidnight(gw.deps.now())));
  assert.equal(upstream.requests.length, 3, "no refused request reached the upstream");

  const day = gw.deps.now().toISOString().slice(0, 10);
  const charged = await limitCounter(gw.store.kv, ["limit", "token", record.id, "cost", "day", day]);
  assert.equal(charged, 567_000_000n, "the budget holds the real cost in pico-units, not the estimates");
});

Deno.test("a group's cost_per_month budget from the config is shared by its tokens and names no one's spend", async () => {
  await using upstream = fakeUpstream();
  answerWithCacheUsage(upstream);
  const extraGroups =
    "  - { name: capped, listing: anthropic, models: [claude-priced], limits: { cost_per_month: 0.0003 } }";
  await using gw = await spendGateway(upstream, { extraGroups });
  const spender = await gw.store.createToken({ group: "capped" });
  const other = await gw.store.createToken({ group: "capped" });
  const first = await gw.post("/v1/messages", messagesBody({ model: "claude-priced" }), {
    "x-api-key": spender.secret,
  });
  assert.equal(first.status, 200);
  await first.body?.cancel();
  await gw.deps.operator.limiter.settled();
  const refused = await gw.post("/v1/messages", messagesBody({ model: "claude-priced" }), {
    "x-api-key": other.secret,
  });
  assert.equal(refused.status, 429);
  const { message } = (await refused.json()).error;
  assert.match(message, /^Group "capped" is over its budget cost_per_month = 0\.0003 USD/);
  assert.ok(!message.includes(ANTHROPIC_CACHE_COST), "the message tells another token what was spent");
  assert.ok(!message.includes(spender.record.id));
  assert.equal(refused.headers.get("anthropic-ratelimit-tokens-remaining"), null);
});

Deno.test("a request admitted under budget that ends over it is charged in full, and the next is refused", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  upstream.routes.set("POST /anth/v1/messages", () => stream.response);
  await using gw = await spendGateway(upstream);
  const { secret, record } = await gw.store.createToken({ group: "spend" });
  await gw.store.updateToken(record.id, { limits: { cost_per_day: 0.001 } });
  const pending = gw.post("/v1/messages", messagesBody({ model: "claude-priced", stream: true }), {
    "x-api-key": secret,
  });
  stream.send(fixture("anthropic/usage_cache.sse").replace('"output_tokens":7', '"output_tokens":100'));
  stream.end();
  const res = await pending;
  assert.equal(res.status, 200);
  await readText(res);
  await gw.deps.operator.limiter.settled();
  // 20*3 + 100*15 + 80*0.3 = 1584 per million: 0.001584, more than the budget of 0.001 that admitted it.
  const day = gw.deps.now().toISOString().slice(0, 10);
  assert.equal(await limitCounter(gw.store.kv, ["limit", "token", record.id, "cost", "day", day]), 1_584_000_000n);
  const next = await gw.post("/v1/messages", messagesBody({ model: "claude-priced" }), { "x-api-key": secret });
  assert.equal(next.status, 429);
  await next.body?.cancel();
});

Deno.test("a request admitted before midnight that ends after it is charged to the day it was admitted", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  answerWithCacheUsage(upstream);
  upstream.routes.set(
    "POST /anth/v1/messages",
    (seen) => seen.body?.stream ? stream.response : jsonReply(anthropicMessage()),
  );
  let at = Date.parse("2026-07-01T23:59:59.500Z");
  await using gw = await spendGateway(upstream, { now: () => new Date(at) });
  const { secret, record } = await gw.store.createToken({ group: "spend" });
  await gw.store.updateToken(record.id, { limits: { cost_per_day: 0.0002 } });
  const headers = { "x-api-key": secret };
  const pending = gw.post("/v1/messages", messagesBody({ model: "claude-priced", stream: true }), headers);
  const sse = fixture("anthropic/usage_cache.sse");
  stream.send(firstEvent(sse));
  const res = await pending;
  at = Date.parse("2026-07-02T00:00:01Z");
  stream.send(sse.slice(firstEvent(sse).length));
  stream.end();
  await readText(res);
  await gw.deps.operator.limiter.settled();
  const charged = (day: string) => limitCounter(gw.store.kv, ["limit", "token", record.id, "cost", "day", day]);
  assert.equal(await charged("2026-07-01"), 189_000_000n);
  assert.equal(await charged("2026-07-02"), null);
  const nextDay = await gw.post("/v1/messages", messagesBody({ model: "claude-priced" }), headers);
  assert.equal(nextDay.status, 200, "the new day's budget is untouched");
  await nextDay.body?.cancel();
});

Deno.test("20 concurrent requests on two instances sharing the KV let exactly 5 through a budget that fits 5", async () => {
  await using upstream = fakeUpstream();
  // Every answer uses exactly what was estimated, so each request costs its reservation.
  upstream.routes.set("POST /anth/v1/messages", (seen) => {
    const { prompt, output } = estimateRequest(seen.body!);
    return jsonReply({ ...anthropicMessage(), usage: { input_tokens: prompt, output_tokens: output } });
  });
  const body = messagesBody({ model: "claude-priced" });
  const { prompt, output } = estimateRequest(body);
  const each = costOf(
    { input_tokens: prompt, output_tokens: output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    CLAUDE_PRICE,
  );
  const kv = await Deno.openKv(":memory:");
  try {
    await using one = await spendGateway(upstream, { kv });
    await using two = await spendGateway(upstream, { kv, now: one.deps.now });
    const { secret, record } = await one.store.createToken({ group: "spend" });
    await one.store.updateToken(record.id, { limits: { cost_per_day: Number(formatMoney(5n * each)) } });
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).post("/v1/messages", body, { "x-api-key": secret })),
    );
    for (const res of responses) await res.body?.cancel();
    assert.equal(responses.filter((res) => res.status === 200).length, 5);
    assert.equal(responses.filter((res) => res.status === 429).length, 15);
    assert.equal(upstream.requests.length, 5);
    await one.deps.operator.limiter.settled();
    await two.deps.operator.limiter.settled();
    const day = one.deps.now().toISOString().slice(0, 10);
    assert.equal(await limitCounter(kv, ["limit", "token", record.id, "cost", "day", day]), 5n * each);
  } finally {
    kv.close();
  }
});

/**
 * @module Cost over real HTTP: every path (passthrough and translated, streamed and not) records the cost of its
 * deployment's price, unpriced models are counted apart, and sums of many fractional costs stay exact.
 */
import assert from "node:assert/strict";
import type { Exchange } from "../../src/core/exchange.ts";
import { requestLog, usageTotals } from "../../src/usage/query.ts";
import { usageRecorder } from "../../src/usage/recorder.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, readText } from "../_helpers.ts";
import { answerWithCacheUsage, ANTHROPIC_CACHE_COST, CHAT_CACHE_COST, spendGateway } from "../_spend.ts";

const chat = (model: string, stream = false) => ({ model, stream, messages: [{ role: "user", content: "Hi" }] });
const responses = (model: string, stream = false) => ({ model, stream, input: "Hi" });

const PATHS = [
  { name: "Messages, passthrough", path: "/v1/messages", body: messagesBody({ model: "claude-priced" }) },
  {
    name: "Messages streamed, passthrough",
    path: "/v1/messages",
    body: messagesBody({ model: "claude-priced", stream: true }),
  },
  { name: "Chat Completions to Anthropic, translated", path: "/v1/chat/completions", body: chat("claude-priced") },
  {
    name: "Chat Completions streamed to Anthropic, translated",
    path: "/v1/chat/completions",
    body: chat("claude-priced", true),
  },
  { name: "Chat Completions, passthrough", path: "/v1/chat/completions", body: chat("gpt-priced") },
  { name: "Chat Completions streamed, passthrough", path: "/v1/chat/completions", body: chat("gpt-priced", true) },
  {
    name: "Messages to a chat upstream, translated",
    path: "/v1/messages",
    body: messagesBody({ model: "gpt-priced" }),
  },
  {
    name: "Messages streamed to a chat upstream, translated",
    path: "/v1/messages",
    body: messagesBody({ model: "gpt-priced", stream: true }),
  },
  {
    name: "Responses streamed to Anthropic, translated",
    path: "/v1/responses",
    body: responses("claude-priced", true),
  },
  { name: "Responses to a chat upstream, translated", path: "/v1/responses", body: responses("gpt-priced") },
];

for (const c of PATHS) {
  Deno.test(`cost is recorded at the deployment's price: ${c.name}`, async () => {
    await using upstream = fakeUpstream();
    answerWithCacheUsage(upstream);
    await using gw = await spendGateway(upstream);
    const { secret, record } = await gw.store.createToken({ group: "spend" });
    const res = await gw.post(c.path, c.body, { "x-api-key": secret });
    assert.equal(res.status, 200, await res.clone().text());
    await readText(res);
    await gw.flush();
    const want = c.body.model === "claude-priced" ? ANTHROPIC_CACHE_COST : CHAT_CACHE_COST;
    const [entry] = await requestLog(gw.store.kv, { limit: 10 });
    const stream = c.body.stream === true;
    assert.deepEqual([entry.stream, entry.usage_complete, entry.cost, entry.unpriced], [stream, true, want, false]);
    const day = gw.deps.now().toISOString().slice(0, 10);
    const [row] = await usageTotals(gw.store.kv, { by: "token", since: day, until: day, name: record.id });
    assert.deepEqual([row.cost, row.unpriced], [want, 0]);
  });
}

Deno.test("a model without a price is recorded at cost 0 and counted as unpriced", async () => {
  await using upstream = fakeUpstream();
  answerWithCacheUsage(upstream);
  await using gw = await spendGateway(upstream);
  const { secret, record } = await gw.store.createToken({ group: "spend" });
  for (const model of ["claude-test", "claude-priced", "claude-test"]) {
    await (await gw.post("/v1/messages", messagesBody({ model }), { "x-api-key": secret })).text();
  }
  const refused = await gw.post("/v1/messages", messagesBody({ model: "gpt-test" }), { "x-api-key": secret });
  assert.equal(refused.status, 404);
  await refused.body?.cancel();
  await gw.flush();
  // The clock is frozen, so the log's order among these three is the request ids'; compare them as a set.
  const entries = (await requestLog(gw.store.kv, { limit: 10 })).map((e) => [e.model, e.cost, e.unpriced]);
  assert.deepEqual(entries.sort(), [
    // The refused request used no tokens: it costs nothing, and is not unpriced.
    [null, "0", false],
    ["claude-priced", ANTHROPIC_CACHE_COST, false],
    ["claude-test", "0", true],
    ["claude-test", "0", true],
  ]);
  const day = gw.deps.now().toISOString().slice(0, 10);
  const [row] = await usageTotals(gw.store.kv, { by: "token", since: day, until: day, name: record.id });
  assert.deepEqual([row.requests, row.unpriced, row.cost, row.total_tokens], [4, 2, ANTHROPIC_CACHE_COST, 321]);
});

Deno.test("the price belongs to the deployment: a failover to a cheaper upstream costs its price", async () => {
  await using upstream = fakeUpstream();
  const usage = { input_tokens: 0, output_tokens: 1000, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  let dearFails = false;
  upstream.routes.set(
    "POST /dear/v1/messages",
    () =>
      dearFails
        ? jsonReply({ type: "error", error: { type: "api_error", message: "down" } }, 500)
        : jsonReply({ ...anthropicMessage(), usage }),
  );
  upstream.routes.set("POST /cheap/v1/messages", () => jsonReply({ ...anthropicMessage(), usage }));
  const twoWays = (name: string, priority: number, output: number) =>
    `  - name: ${name}
    protocol: anthropic
    base_url: ${upstream.url}/${name}/v1
    api_key_env: TEST_ANTHROPIC_KEY
    priority: ${priority}
    models: [{ id: claude-two, upstream_id: claude-test, price: { output: ${output} } }]
`;
  await using gw = await spendGateway(upstream, {
    extraUpstreams: twoWays("dear", 1, 20) + twoWays("cheap", 0, 10.5),
    extraGroups: "  - { name: two, listing: anthropic, models: [claude-two] }",
  });
  const { secret } = await gw.store.createToken({ group: "two" });
  await (await gw.post("/v1/messages", messagesBody({ model: "claude-two" }), { "x-api-key": secret })).text();
  dearFails = true;
  await (await gw.post("/v1/messages", messagesBody({ model: "claude-two" }), { "x-api-key": secret })).text();
  await gw.flush();
  const entries = (await requestLog(gw.store.kv, { limit: 10 })).map((e) => [e.upstream, e.cost]);
  assert.deepEqual(entries.sort(), [["cheap", "0.0105"], ["dear", "0.02"]]);
  assert.deepEqual(upstream.requests.map((r) => r.path), [
    "/dear/v1/messages",
    "/dear/v1/messages",
    "/cheap/v1/messages",
  ]);
});

/** A finished exchange for the recorder, priced and used as given. */
function recorded(i: number, usage: Exchange["usage"], price: Exchange["price"]): Exchange {
  return {
    request_id: `req_${i}`,
    started_at: Date.parse("2026-05-06T07:08:09Z") + i,
    method: "POST",
    route: "/v1/messages",
    protocol: "anthropic",
    token_id: "tok_sum",
    group: "g",
    model: i % 2 ? "odd" : "even",
    stream: false,
    attempts: [],
    status: 200,
    usage,
    usage_complete: true,
    price,
  };
}

Deno.test("sums over 10,000 recorded requests with fractional prices are exact", async () => {
  await using kv = await Deno.openKv(":memory:");
  const recorder = usageRecorder(kv, { flushMs: 60_000, logDays: 1, log: () => {} });
  // Each request costs 7*0.075 + 3*0.6 + 13*0.03 + 11*0.09375 = 3.74625 per million tokens: 0.00000374625.
  const usage = { input_tokens: 7, output_tokens: 3, cache_read_input_tokens: 13, cache_creation_input_tokens: 11 };
  const price = { input: 0.075, output: 0.6, cache_read: 0.03, cache_write: 0.09375 };
  let floatSum = 0;
  for (let i = 0; i < 10_000; i++) {
    recorder.finish!(recorded(i, usage, price));
    floatSum += 0.00000374625;
  }
  await recorder.close();
  const day = "2026-05-06";
  const [byToken] = await usageTotals(kv, { by: "token", since: day, until: day });
  assert.deepEqual([byToken.requests, byToken.cost, byToken.unpriced], [10_000, "0.0374625", 0]);
  const byModel = await usageTotals(kv, { by: "model", since: day, until: day });
  assert.deepEqual(byModel.map((row) => [row.key, row.cost]), [["even", "0.01873125"], ["odd", "0.01873125"]]);
  const [byDay] = await usageTotals(kv, { by: "day", since: day, until: day });
  assert.equal(byDay.cost, "0.0374625");
  // The same sum in floating point drifts; the recorded one does not.
  assert.notEqual(String(floatSum), "0.0374625");
});

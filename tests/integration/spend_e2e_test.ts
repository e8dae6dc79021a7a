/**
 * @module Spend end to end, as an operator and a client meet it: a token with a budget made through the admin API,
 * used with the official SDKs, its spend read back through the admin API and the CLI, the budget hit, then raised.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { cliSetup } from "../_cli.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { deadlineFetch, startGateway } from "../_helpers.ts";
import { answerWithCacheUsage, ANTHROPIC_CACHE_COST, frozenClock, pricedUpstreams, SPEND_GROUP } from "../_spend.ts";

const ASK = { model: "claude-priced", max_tokens: 1, messages: [{ role: "user" as const, content: "Hi" }] };

Deno.test("a budget made through the admin API, spent with the SDKs, read back by API and CLI, then 429", async () => {
  await using upstream = fakeUpstream();
  answerWithCacheUsage(upstream);
  const options = { extraUpstreams: pricedUpstreams(upstream.url), extraGroups: SPEND_GROUP };
  await using setup = await cliSetup(upstream.url, options);
  const kv = await Deno.openKv(setup.kvPath);
  try {
    await using gw = await startGateway(upstream.url, { ...options, kv, admin: true, now: frozenClock() });
    const created = await gw.admin("POST", "/admin/tokens", {
      group: "spend",
      name: "intern",
      limits: { cost_per_day: 0.000378 },
    });
    assert.equal(created.status, 201);
    const { token, secret } = await created.json();
    assert.deepEqual(token.limits, { cost_per_day: 0.000378 });

    // The SDKs keep their default retries: a spent budget must stop them at once.
    const anthropic = new Anthropic({ apiKey: secret, baseURL: gw.url, fetch: deadlineFetch() });
    assert.equal((await anthropic.messages.create(ASK)).usage.cache_read_input_tokens, 80);
    await gw.deps.operator.limiter.settled();
    assert.equal((await anthropic.messages.stream(ASK).finalMessage()).stop_reason, "end_turn");
    await gw.deps.operator.limiter.settled();
    await gw.flush();

    const usage = await (await gw.admin("GET", `/admin/usage?by=token&name=${token.id}&since=1d`)).json();
    assert.equal(usage.currency, "USD");
    assert.deepEqual(
      usage.data.map((r: Record<string, unknown>) => [r.key, r.requests, r.cost, r.unpriced]),
      [[token.id, 2, "0.000378", 0]],
    );
    const log = await (await gw.admin("GET", `/admin/requests?token=${token.id}`)).json();
    assert.deepEqual(log.data.map((e: Record<string, unknown>) => [e.stream, e.cost]).sort(), [
      [false, ANTHROPIC_CACHE_COST],
      [true, ANTHROPIC_CACHE_COST],
    ]);

    const cliJson = JSON.parse((await setup.cli(`usage --by token --name ${token.id} --json`)).out);
    assert.deepEqual(cliJson.data.map((r: Record<string, unknown>) => r.cost), ["0.000378"]);
    const cliTable = (await setup.cli(`usage --by token --name ${token.id}`)).out;
    assert.match(cliTable, /, cost in USD\n/);
    assert.match(cliTable, /TOTAL\s+COST\s+UNPRICED\n/);
    assert.match(
      cliTable,
      new RegExp(`^${token.id}\\s+2\\s+0\\s+0\\s+40\\s+14\\s+160\\s+0\\s+214\\s+0\\.000378\\s+0$`, "m"),
    );
    const logTable = (await setup.cli(`usage log --token ${token.id}`)).out;
    assert.match(logTable, /OUTPUT\s+COST\s+COMPLETE/);
    assert.equal(logTable.split("\n").filter((line) => line.includes(` ${ANTHROPIC_CACHE_COST} `)).length, 2);

    const before = gw.exchanges.length;
    await assert.rejects(anthropic.messages.create(ASK), (err: unknown) => {
      assert.ok(err instanceof Anthropic.RateLimitError);
      assert.match(err.message, /over its budget cost_per_day = 0\.000378 USD/);
      return true;
    });
    const openai = new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, fetch: deadlineFetch() });
    const chat = { model: "gpt-priced", messages: [{ role: "user" as const, content: "Hi" }] };
    await assert.rejects(openai.chat.completions.create(chat), OpenAI.RateLimitError);
    assert.equal(gw.exchanges.length - before, 2, "an SDK retried against a spent budget");

    // The operator raises the budget from the CLI; the running gateway sees it.
    const raised = await setup.cli(`token update ${token.id} --cost-per-day 0.5 --cost-per-month 10 --json`);
    assert.deepEqual(JSON.parse(raised.out).limits, { cost_per_day: 0.5, cost_per_month: 10 });
    assert.match((await setup.cli("token list")).out, /cost\/day=0\.5 cost\/month=10/);
    await gw.deps.operator.credentials.refreshed();
    assert.equal((await openai.chat.completions.create(chat)).usage?.prompt_tokens, 100);
  } finally {
    kv.close();
  }
});

/**
 * @module Absurd usage from an upstream over real HTTP: counts past the bound are dropped where they enter, with a
 * warning naming the upstream, and a request whose cost no KV sum can hold is dropped alone; in both cases every other
 * request still reaches the request log and the usage totals.
 */
import assert from "node:assert/strict";
import { requestLog, usageTotals } from "../../src/usage/query.ts";
import { type FakeUpstream, jsonReply, type SeenRequest, sseReply } from "../_fake_upstream.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, readText } from "../_helpers.ts";
import { spendGateway } from "../_spend.ts";

/** The usage the fake upstream reports for a request whose prompt is "absurd"; every other prompt gets 5 in, 2 out. */
function answerWith(upstream: FakeUpstream, path: string, absurd: Record<string, number>): void {
  upstream.routes.set(`POST ${path}`, (seen: SeenRequest) => {
    const messages = seen.body?.messages as { content: string }[];
    const message = anthropicMessage();
    if (messages[0].content === "absurd") message.usage = { ...message.usage as object, ...absurd };
    if (!seen.body?.stream) return jsonReply(message);
    const start = { type: "message_start", message: { ...message, content: [], stop_reason: null } };
    const events = [
      ["message_start", start],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: message.usage }],
      ["message_stop", { type: "message_stop" }],
    ];
    return sseReply(events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join(""));
  });
}

/** Each absurd usage, the fields the warning names, and the input and output then recorded for that request. */
const ABSURD: { name: string; usage: Record<string, number>; fields: string[]; recorded: number[] }[] = [
  { name: "input_tokens 1e20", usage: { input_tokens: 1e20 }, fields: ["input_tokens"], recorded: [0, 2] },
  {
    name: "2^53 in both counts",
    usage: { input_tokens: 2 ** 53, output_tokens: 2 ** 53 },
    fields: ["input_tokens", "output_tokens"],
    recorded: [0, 0],
  },
];

for (const c of ABSURD) {
  for (const stream of [false, true]) {
    Deno.test(`usage of ${c.name} (${stream ? "streamed" : "not streamed"}) is dropped, and later requests are recorded`, async () => {
      await using upstream = fakeUpstream();
      answerWith(upstream, "/anth/v1/messages", c.usage);
      await using gw = await spendGateway(upstream);
      const hostile = await gw.store.createToken({ group: "spend" });
      const other = await gw.store.createToken({ group: "spend" });
      const ask = async (secret: string, content: string) => {
        const body = messagesBody({ model: "claude-priced", stream, messages: [{ role: "user", content }] });
        const res = await gw.post("/v1/messages", body, { "x-api-key": secret });
        assert.equal(res.status, 200);
        await readText(res);
      };
      await ask(hostile.secret, "absurd");
      await gw.flush();
      await ask(other.secret, "Hi");
      await ask(hostile.secret, "Hi");
      await gw.flush();

      const log = await requestLog(gw.store.kv, { limit: 10 });
      const recorded = log.map((e) => [e.token_id, e.input_tokens, e.output_tokens]);
      const want = [[hostile.record.id, ...c.recorded], [other.record.id, 5, 2], [hostile.record.id, 5, 2]];
      assert.deepEqual(recorded.sort(), want.sort());
      const day = gw.deps.now().toISOString().slice(0, 10);
      const [row] = await usageTotals(gw.store.kv, { by: "token", since: day, until: day, name: other.record.id });
      assert.deepEqual([row.requests, row.input_tokens, row.cost], [1, 5, "0.000045"]);
      const warned = gw.logs.filter((line) => line.event === "upstream_usage_invalid");
      assert.ok(warned.length >= 1);
      assert.deepEqual(warned.map((line) => line.upstream), warned.map(() => "priced-a"));
      assert.deepEqual(warned[0].fields, c.fields);
      const failures = gw.logs.filter((line) => /kv_write_gave_up|usage_flush_deferred/.test(String(line.event)));
      assert.deepEqual(failures, []);
    });
  }
}

Deno.test("a request whose cost no KV sum can hold is dropped alone; the other requests are recorded", async () => {
  await using upstream = fakeUpstream();
  // A billion tokens is within the bound, but at the highest price a config accepts it costs 10^21 pico-units.
  answerWith(upstream, "/anth/v1/messages", { input_tokens: 1_000_000_000 });
  await using gw = await spendGateway(upstream, {
    extraUpstreams: `  - name: priced-max
    protocol: anthropic
    base_url: ${upstream.url}/anth/v1
    api_key_env: TEST_ANTHROPIC_KEY
    models:
      - { id: claude-dear, upstream_id: claude-test, price: { input: 1000000 } }
`,
    extraGroups: "  - { name: dear, listing: auto, models: [claude-dear] }",
  });
  const hostile = await gw.store.createToken({ group: "dear" });
  const other = await gw.store.createToken({ group: "dear" });
  for (const [secret, content] of [[other.secret, "Hi"], [hostile.secret, "absurd"], [other.secret, "Hi"]]) {
    const body = messagesBody({ model: "claude-dear", messages: [{ role: "user", content }] });
    const res = await gw.post("/v1/messages", body, { "x-api-key": secret });
    assert.equal(res.status, 200);
    await readText(res);
  }
  await gw.flush();
  const log = await requestLog(gw.store.kv, { limit: 10 });
  assert.deepEqual(log.map((e) => e.token_id), [other.record.id, other.record.id]);
  const day = gw.deps.now().toISOString().slice(0, 10);
  const [row] = await usageTotals(gw.store.kv, { by: "model", since: day, until: day, name: "claude-dear" });
  assert.deepEqual([row.requests, row.input_tokens, row.cost], [2, 10, "10"]);
  const dropped = gw.logs.filter((line) => line.event === "usage_entry_dropped");
  assert.deepEqual(dropped.map((line) => [line.upstream, line.error]), [["priced-max", "cost"]]);
  assert.deepEqual(gw.logs.filter((line) => /kv_write_gave_up|usage_flush_deferred/.test(String(line.event))), []);
});

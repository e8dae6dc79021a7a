/**
 * @module What a gateway-run batch costs and may use: each request is recorded when its result is in, under the
 * batch's route with its token, group, person and model, at the deployment's full price; a token's rate limit holds
 * its requests back until the window has room (none is run past it, none fails for it); a batch out of time ends
 * with its unrun requests expired.
 */
import assert from "node:assert/strict";
import { requestLog } from "../../src/usage/query.ts";
import { chatCompletion, type FakeUpstream, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { answerWithCacheUsage, CHAT_CACHE_COST, pricedUpstreams, SPEND_GROUP } from "../_spend.ts";
import { caller, gateway, linesOf, messagesBatch, type Obj, pollUntil, recordOf, runner } from "../_gateway_batches.ts";

Deno.test("each request of a gateway-run batch is recorded with its token, group, person and model at full price", async () => {
  await using upstream = fakeUpstream();
  answerWithCacheUsage(upstream);
  await using gw = await gateway(upstream, { extraUpstreams: pricedUpstreams(upstream.url), extraGroups: SPEND_GROUP });
  const { record: token } = await gw.store.createToken({ group: "spend", owner: "ada@example.com" });
  const group = await gw.store.getGroup("spend");
  const owner = { token, group: group! };
  const { record } = await messagesBatch(gw, owner, "gpt-priced", ["a", "b"]);
  assert.equal(record.owner_email, "ada@example.com");
  assert.equal(record.group, "spend");
  await pollUntil(gw, record, (batch) => batch.processing_status === "ended");
  await gw.flush();
  const entries = await requestLog(gw.store.kv, { token_id: token.id, limit: 10 });
  assert.equal(entries.length, 2);
  for (const entry of entries) {
    assert.equal(entry.route, "/v1/messages/batches");
    assert.equal(entry.token_id, token.id);
    assert.equal(entry.owner, "ada@example.com");
    assert.equal(entry.group, "spend");
    assert.equal(entry.model, "gpt-priced");
    assert.equal(entry.upstream, "priced-o");
    assert.equal(entry.status, 200);
    // The full price: a batch the gateway runs is the same requests sent one by one.
    assert.equal(entry.cost, CHAT_CACHE_COST);
  }
});

/** A gateway on a clock the test moves, and a caller limited to `perMinute` requests a minute. */
async function limitedGateway(upstream: FakeUpstream, perMinute: number, concurrency = 8) {
  upstream.routes.set("POST /oai/v1/chat/completions", () => jsonReply(chatCompletion("fine")));
  const clock = { at: Date.UTC(2026, 0, 5, 10, 0, 30) };
  // Leases outlast the clock's jumps: nothing here is left by a dead instance.
  const gw = await gateway(upstream, {
    now: () => new Date(clock.at),
    extraYaml: `batches: { poll_ms: 50, lease_ms: 600000, concurrency: ${concurrency} }\n`,
  });
  const owner = await caller(gw, "mixed");
  await gw.store.updateToken(owner.token.id, { limits: { requests_per_minute: perMinute } });
  return Object.assign(clock, { gw, owner, [Symbol.asyncDispose]: () => gw[Symbol.asyncDispose]() });
}

Deno.test("a token's rate limit holds a batch's requests back until its window has room, then they run", async () => {
  await using upstream = fakeUpstream();
  await using limited = await limitedGateway(upstream, 2);
  const { gw, owner } = limited;
  const { record } = await messagesBatch(gw, owner, "gpt-test", ["a", "b", "c", "d", "e"]);
  const refusals = () => gw.exchanges.filter((exchange) => exchange.status === 429).length;
  // The first minute: two requests run; the other three are refused by the limit before any upstream call.
  await pollUntil(gw, record, () => refusals() >= 3 && upstream.requests.length >= 2);
  assert.equal(upstream.requests.length, 2);
  // The next minute has room for two more, and the last is refused again.
  limited.at += 60_000;
  await pollUntil(gw, record, () => refusals() >= 4 && upstream.requests.length >= 4);
  assert.equal(upstream.requests.length, 4);
  limited.at += 60_000;
  const ended = await pollUntil(gw, record, (batch) => batch.processing_status === "ended");
  assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 5, errored: 0, canceled: 0, expired: 0 });
  assert.equal(upstream.requests.length, 5, "each request ran once; none failed for the limit");
  const lines = await linesOf(await runner(gw).results(record));
  assert.ok(lines.every((line) => (line.result as Obj).type === "succeeded"));
});

Deno.test("a batch whose window closes with requests unrun ends with them expired", async () => {
  await using upstream = fakeUpstream();
  // One request at a time: one already under way when the clock jumps past the window would meet a fresh minute of
  // the limit and run, which is right for it but not what this test counts.
  await using limited = await limitedGateway(upstream, 1, 1);
  const { gw, owner } = limited;
  const made = await runner(gw).create({
    protocol: "openai",
    caller: owner,
    requestId: "req_test",
    requests: ["a", "b", "c"].map((id) => ({
      custom_id: id,
      endpoint: "/v1/chat/completions" as const,
      body: { model: "gpt-test", messages: [{ role: "user", content: id }] },
    })),
    openai: { input_file_id: "file-in", endpoint: "/v1/chat/completions", completion_window: "24h", metadata: null },
  });
  const record = await recordOf(gw, made.id as string, owner);
  await pollUntil(gw, record, () => gw.exchanges.some((exchange) => exchange.status === 429));
  limited.at += 25 * 3_600_000;
  const ended = await pollUntil(gw, record, (batch) => batch.status === "expired");
  assert.deepEqual(ended.request_counts, { total: 3, completed: 1, failed: 2 });
  assert.equal(typeof ended.expired_at, "number");
  const errors = { ...record, kind: "file" as const, id: ended.error_file_id as string };
  const lines = await linesOf(await runner(gw).results(errors));
  assert.deepEqual(lines.map((line) => (line.error as Obj).code), ["batch_expired", "batch_expired"]);
  assert.equal(upstream.requests.length, 1);
});

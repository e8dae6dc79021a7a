/**
 * @module Leased limit shares over real HTTP, with every KV call counted: a share is taken in one commit and then
 * admits with no KV call, is topped up before it runs out, goes back at its expiry and at its window's end; an
 * instance that dies keeps only its share; a KV that fails leaves what the share holds; a budget crossed mid-stream.
 */
import assert from "node:assert/strict";
import { delayedKv } from "../../src/access/kv_delay.ts";
import { estimateRequestTokens } from "../../src/access/limits.ts";
import { flakyKv } from "../_flaky_kv.ts";
import { type FakeUpstream, fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import {
  anthropicMessage,
  fixture,
  limitCounter,
  messagesBody,
  readText,
  startGateway,
  type TestGateway,
  waitFor,
} from "../_helpers.ts";

/** Sweeps run when a test says so. */
const SHARES_YAML = "limit_shares: { sweep_ms: 60000, lease_ms: 10000, horizon_ms: 5000 }\n";

/** A clock a test moves by hand, starting mid-minute. */
function movableClock() {
  const start = Date.now() - (Date.now() % 60_000) + 30_000;
  const clock = { at: start, now: () => new Date(clock.at) };
  return clock;
}

async function status(gw: TestGateway, secret: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await gw.post("/v1/messages", messagesBody(extra), { "x-api-key": secret });
  await res.body?.cancel();
  return res.status;
}

/**
 * Streams answers of 9 input and 140 output tokens: far past the 100 a minute the tests' tokens may use and what a
 * request takes from its share, known only at the stream's end.
 */
function answerPastTheShare(upstream: FakeUpstream): void {
  const long = fixture("anthropic_text.sse").replace('"usage":{"output_tokens":3}', '"usage":{"output_tokens":140}');
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(long));
}

function minuteKey(id: string, at: number): Deno.KvKey {
  return ["limit", "token", id, "requests", "minute", new Date(at).toISOString().slice(0, 16)];
}

Deno.test("a share is taken in one commit, admits with no KV call, is topped up early and goes back at expiry", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const counted = delayedKv(await Deno.openKv(":memory:"), 0);
  const clock = movableClock();
  const commits = () => counted.calls().get("commit") ?? 0;
  try {
    await using gw = await startGateway(upstream.url, { kv: counted.kv, now: clock.now, extraYaml: SHARES_YAML });
    const { secret, record } = await gw.store.createToken({ group: "default" });
    await gw.store.updateToken(record.id, { limits: { requests_per_minute: 1000 } });
    await gw.deps.operator.credentials.refreshed();
    const before = commits();
    assert.equal(await status(gw, secret), 200);
    assert.equal(commits() - before, 1, "the first request takes a share in one commit");
    // A first share is five requests' worth (the horizon at one request a second).
    assert.equal(await limitCounter(counted.kv, minuteKey(record.id, clock.at)), 5n);
    for (let i = 0; i < 3; i++) assert.equal(await status(gw, secret), 200);
    assert.equal(commits() - before, 1, "requests within the share make no KV call");
    assert.equal(await status(gw, secret), 200);
    // The share is spent: it is topped up in the background, sized by the recent rate, before anyone waits.
    await waitFor(() => commits() - before === 2 ? true : undefined);
    assert.equal(await limitCounter(counted.kv, minuteKey(record.id, clock.at)), 30n);
    assert.equal(await status(gw, secret), 200);
    assert.equal(commits() - before, 2);

    clock.at += 10_001;
    await gw.deps.operator.limiter.sweep();
    assert.equal(
      await limitCounter(counted.kv, minuteKey(record.id, clock.at)),
      6n,
      "what the expired share did not use went back",
    );
  } finally {
    counted.kv.close();
  }
});

Deno.test("a share goes back when its window ends, and the new window starts from what was really used", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const clock = movableClock();
  // A lease that outlasts the window: the share goes back because its window ended, not because its lease did.
  const extraYaml = SHARES_YAML.replace("lease_ms: 10000", "lease_ms: 120000");
  await using gw = await startGateway(upstream.url, { now: clock.now, extraYaml });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { requests_per_minute: 1000 } });
  const first = clock.at;
  for (let i = 0; i < 2; i++) assert.equal(await status(gw, secret), 200);
  assert.equal(await limitCounter(gw.store.kv, minuteKey(record.id, first)), 5n);
  clock.at += 30_000;
  await gw.deps.operator.limiter.sweep();
  assert.equal(await limitCounter(gw.store.kv, minuteKey(record.id, first)), 2n);
  assert.equal(await status(gw, secret), 200);
  assert.equal(await limitCounter(gw.store.kv, minuteKey(record.id, clock.at)), 5n, "a fresh share in the new window");
});

Deno.test("one instance, 10 a minute, 50 at once: exactly 10 pass and 40 get 429 with retry-after", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { now: movableClock().now, extraYaml: SHARES_YAML });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { requests_per_minute: 10 } });
  const answers = await Promise.all(
    Array.from({ length: 50 }, () => gw.post("/v1/messages", messagesBody(), { "x-api-key": secret })),
  );
  for (const res of answers) {
    if (res.status === 429) assert.match(res.headers.get("retry-after") ?? "", /^\d+$/);
    await res.body?.cancel();
  }
  const counts: Record<number, number> = {};
  for (const res of answers) counts[res.status] = (counts[res.status] ?? 0) + 1;
  assert.deepEqual(counts, { 200: 10, 429: 40 });
});

Deno.test("an instance that dies holding a share loses that share for the window, no more", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const kv = await Deno.openKv(":memory:");
  const clock = movableClock();
  try {
    const dying = await startGateway(upstream.url, { kv, now: clock.now, extraYaml: SHARES_YAML });
    const { secret, record } = await dying.store.createToken({ group: "default" });
    await dying.store.updateToken(record.id, { limits: { requests_per_minute: 12 } });
    assert.equal(await status(dying, secret), 200);
    const held = Number(await limitCounter(kv, minuteKey(record.id, clock.at)));
    assert.ok(held > 1 && held <= 5, `the share is ${held} requests`);
    // It dies: nothing it holds goes back (its KV handle fails from here on).
    const flaky = flakyKv(kv);
    flaky.busy = true;
    await dying[Symbol.asyncDispose]();
    flaky.busy = false;

    await using survivor = await startGateway(upstream.url, { kv, now: clock.now, extraYaml: SHARES_YAML });
    const statuses = [];
    for (let i = 0; i < 15; i++) statuses.push(await status(survivor, secret));
    assert.equal(statuses.filter((s) => s === 200).length, 12 - held, "the limit, less the dead instance's share");
    clock.at += 60_000;
    assert.equal(await status(survivor, secret), 200, "the next window is whole again");
  } finally {
    kv.close();
  }
});

Deno.test("a KV that fails: a share left still admits, an empty one is 503 with retry-after, unlimited tokens go on", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const kv = await Deno.openKv(":memory:");
  try {
    await using gw = await startGateway(upstream.url, { kv, now: movableClock().now, extraYaml: SHARES_YAML });
    const { secret, record } = await gw.store.createToken({ group: "default" });
    await gw.store.updateToken(record.id, { limits: { requests_per_minute: 100 } });
    assert.equal(await status(gw, secret), 200);
    const flaky = flakyKv(kv);
    flaky.busy = true;
    for (let i = 0; i < 4; i++) assert.equal(await status(gw, secret), 200, "served from the share");
    const refused = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.match((await refused.json()).error.message, /rate limits .* cannot be checked/);
    assert.equal(await status(gw, gw.tokens.default), 200, "a token without limits never waits for the KV");
    assert.ok(
      gw.logs.some((line) => line.event === "kv_write_gave_up" && /^limit_(claim|refresh)$/.test(`${line.operation}`)),
    );
    flaky.busy = false;
    assert.equal(await status(gw, secret), 200, "admitted again once the KV answers");
  } finally {
    kv.close();
  }
});

Deno.test("a stream that crosses the budget is delivered whole, charged in full, and refuses the next on every instance", async () => {
  await using upstream = fakeUpstream();
  answerPastTheShare(upstream);
  const kv = await Deno.openKv(":memory:");
  const clock = movableClock();
  try {
    await using one = await startGateway(upstream.url, { kv, now: clock.now, extraYaml: SHARES_YAML });
    await using two = await startGateway(upstream.url, { kv, now: clock.now, extraYaml: SHARES_YAML });
    const { secret, record } = await one.store.createToken({ group: "default" });
    await one.store.updateToken(record.id, { limits: { tokens_per_minute: 100 } });
    const res = await one.post("/v1/messages", messagesBody({ stream: true }), { "x-api-key": secret });
    assert.equal(res.status, 200);
    assert.match(await readText(res), /message_stop/);
    await waitFor(() => one.exchanges.length === 1 ? true : undefined);
    await one.deps.operator.limiter.sweep();
    const key = ["limit", "token", record.id, "tokens", "minute", new Date(clock.at).toISOString().slice(0, 16)];
    assert.equal(await limitCounter(kv, key), 149n, "the debt past the share is written with no read");
    assert.equal(await status(one, secret), 429);
    await two.deps.operator.credentials.refreshed();
    assert.equal(await status(two, secret), 429, "another instance sees the budget spent");
  } finally {
    kv.close();
  }
});

Deno.test("a debt the KV was too busy to take is kept and written by the next sweep", async () => {
  await using upstream = fakeUpstream();
  answerPastTheShare(upstream);
  const kv = await Deno.openKv(":memory:");
  const clock = movableClock();
  try {
    await using gw = await startGateway(upstream.url, { kv, now: clock.now, extraYaml: SHARES_YAML });
    const { secret, record } = await gw.store.createToken({ group: "default" });
    await gw.store.updateToken(record.id, { limits: { tokens_per_minute: 100 } });
    await readText(await gw.post("/v1/messages", messagesBody({ stream: true }), { "x-api-key": secret }));
    await waitFor(() => gw.exchanges.length === 1 ? true : undefined);
    const key = ["limit", "token", record.id, "tokens", "minute", new Date(clock.at).toISOString().slice(0, 16)];
    const claimed = await limitCounter(kv, key);
    const flaky = flakyKv(kv);
    flaky.busy = true;
    await gw.deps.operator.limiter.sweep();
    assert.equal(await limitCounter(kv, key), claimed, "nothing landed while the KV was busy");
    flaky.busy = false;
    await gw.deps.operator.limiter.sweep();
    assert.equal(await limitCounter(kv, key), 149n, "the debt landed at the next sweep, nothing under-counted");
  } finally {
    kv.close();
  }
});

Deno.test("a debt KV refuses alone (a counter an older version rewrote as a number) is dropped; the others land", async () => {
  await using upstream = fakeUpstream();
  answerPastTheShare(upstream);
  const clock = movableClock();
  await using gw = await startGateway(upstream.url, { now: clock.now, extraYaml: SHARES_YAML });
  const minute = new Date(clock.at).toISOString().slice(0, 16);
  const keys: Deno.KvKey[] = [];
  for (let i = 0; i < 2; i++) {
    const { secret, record } = await gw.store.createToken({ group: "default" });
    await gw.store.updateToken(record.id, { limits: { tokens_per_minute: 100 } });
    const res = await gw.post("/v1/messages", messagesBody({ stream: true }), { "x-api-key": secret });
    await readText(res);
    keys.push(["limit", "token", record.id, "tokens", "minute", minute]);
  }
  await waitFor(() => gw.exchanges.length === 2 ? true : undefined);
  await gw.store.kv.set(keys[0], 27);
  await gw.deps.operator.limiter.sweep();
  assert.equal(await limitCounter(gw.store.kv, keys[1]), 149n, "the other debt is written");
  assert.equal((await gw.store.kv.get(keys[0])).value, 27);
  const giveUps = gw.logs.filter((line) => line.event === "kv_write_gave_up" && line.operation === "limit_flush");
  await gw.deps.operator.limiter.sweep();
  assert.equal(
    gw.logs.filter((line) => line.event === "kv_write_gave_up" && line.operation === "limit_flush").length,
    giveUps.length,
    "a dropped debt is not tried again every sweep",
  );
});

Deno.test("one instance admits a token budget's requests while what is left covers each estimate, share and KV together", async () => {
  await using upstream = fakeUpstream();
  // Each answer uses 10 tokens, less than its estimate: what it did not use stays in the share, less than a request.
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => jsonReply({ ...anthropicMessage(), usage: { input_tokens: 5, output_tokens: 5 } }),
  );
  const clock = movableClock();
  await using gw = await startGateway(upstream.url, { now: clock.now, extraYaml: SHARES_YAML });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_day: 100 } });
  const estimate = estimateRequestTokens(messagesBody());
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) {
    statuses.push(await status(gw, secret));
    await waitFor(() => gw.exchanges.length === i + 1 ? true : undefined);
  }
  // Admitted while 100 less what was used covers the estimate: the share's remainder and KV's room count together.
  const admitted = Math.floor((100 - estimate) / 10) + 1;
  assert.deepEqual(statuses, [...Array(admitted).fill(200), ...Array(12 - admitted).fill(429)]);
  await gw.deps.operator.limiter.settled();
  const day = new Date(clock.at).toISOString().slice(0, 10);
  assert.equal(
    await limitCounter(gw.store.kv, ["limit", "token", record.id, "tokens", "day", day]),
    BigInt(admitted * 10),
  );
});

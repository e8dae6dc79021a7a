/**
 * @module KV write paths when the store is busy or contended: a limit that cannot be checked is a 503 with
 * retry-after in the client's protocol, a usage batch the store refuses is kept for the next flush, an admin
 * change that cannot land is a 503 and a race is a 409, and every give-up is a log line and a metric.
 */
import assert from "node:assert/strict";
import { recordFirstServed } from "../../src/access/model_dates.ts";
import { responseStore } from "../../src/conversations/store.ts";
import { createKvWriter } from "../../src/core/kv_write.ts";
import { requestLog, usageTotals } from "../../src/usage/query.ts";
import { flakyKv } from "../_flaky_kv.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, limitCounter, messagesBody, startGateway } from "../_helpers.ts";

const today = () => new Date().toISOString().slice(0, 10);

async function gateway(upstreamUrl: string) {
  const kv = await Deno.openKv(":memory:");
  const gw = await startGateway(upstreamUrl, { kv, admin: true });
  return { gw, kv, flaky: flakyKv(kv) };
}

async function metric(url: string, name: string): Promise<string[]> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.split("\n").filter((line) => line.startsWith(name));
}

Deno.test("a limit that cannot be checked on a busy store is a 503 with retry-after in each client's protocol", async () => {
  await using upstream = fakeUpstream();
  const { gw, kv, flaky } = await gateway(upstream.url);
  try {
    const { secret, record } = await gw.store.createToken({ group: "oa" });
    await gw.store.updateToken(record.id, { limits: { requests_per_minute: 5 } });
    flaky.busy = true;
    const anthropic = await gw.post("/v1/messages", messagesBody({ model: "gpt-test" }), { "x-api-key": secret });
    assert.equal(anthropic.status, 503);
    assert.equal(anthropic.headers.get("retry-after"), "1");
    const body = await anthropic.json();
    assert.equal(body.type, "error");
    assert.match(body.error.message, /rate limits .* cannot be checked/);
    const chat = await gw.post("/v1/chat/completions", {
      model: "gpt-test",
      messages: [{ role: "user", content: "Hi" }],
    }, {
      "x-api-key": secret,
    });
    assert.equal(chat.status, 503);
    assert.equal(chat.headers.get("retry-after"), "1");
    assert.equal((await chat.json()).error.code, "service_unavailable");
    assert.equal(upstream.requests.length, 0, "nothing went upstream unchecked");
    assert.ok(!gw.logs.some((line) => line.event === "internal_error"));
    assert.equal(gw.logs.filter((line) => line.event === "kv_write_gave_up").length, 2);
    assert.deepEqual(await metric(gw.url, "modelgate_kv_write_give_ups_total{"), [
      'modelgate_kv_write_give_ups_total{operation="limit_claim"} 2',
    ]);
  } finally {
    await gw[Symbol.asyncDispose]();
    kv.close();
  }
});

Deno.test("usage the store refuses is kept and written by the next flush, nothing lost", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const { gw, kv, flaky } = await gateway(upstream.url);
  try {
    for (let i = 0; i < 3; i++) {
      const res = await gw.post("/v1/messages", messagesBody());
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    flaky.busy = true;
    await gw.flush();
    assert.ok(flaky.refused > 0);
    assert.deepEqual(await requestLog(kv, { limit: 10 }), []);
    assert.ok(gw.logs.some((line) => line.event === "usage_flush_deferred" && line.entries === 3));
    const res = await gw.post("/v1/messages", messagesBody());
    await res.body?.cancel();
    flaky.busy = false;
    await gw.flush();
    assert.equal((await requestLog(kv, { limit: 10 })).length, 4);
    const [byModel] = await usageTotals(kv, { by: "model", since: today(), until: today() });
    assert.equal(byModel.requests, 4);
    assert.equal(byModel.input_tokens, 20);
  } finally {
    await gw[Symbol.asyncDispose]();
    kv.close();
  }
});

Deno.test("a share the store will not take back is kept with a log line and a metric, and given back later", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const { gw, kv, flaky } = await gateway(upstream.url);
  try {
    const { secret, record } = await gw.store.createToken({ group: "default" });
    await gw.store.updateToken(record.id, { limits: { tokens_per_minute: 10_000 } });
    // The share is taken; giving back what was not used loses every check.
    upstream.routes.set("POST /anth/v1/messages", () => {
      flaky.conflicting = true;
      return jsonReply(anthropicMessage());
    });
    const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await gw.deps.operator.limiter.settled();
    assert.ok(gw.logs.some((line) => line.event === "kv_write_gave_up" && line.operation === "limit_return"));
    assert.deepEqual(await metric(gw.url, "modelgate_kv_write_give_ups_total{"), [
      'modelgate_kv_write_give_ups_total{operation="limit_return"} 1',
    ]);
    flaky.conflicting = false;
    await gw.deps.operator.limiter.settled();
    const minute = gw.deps.now().toISOString().slice(0, 16);
    assert.equal(await limitCounter(kv, ["limit", "token", record.id, "tokens", "minute", minute]), 7n);
  } finally {
    flaky.conflicting = false;
    await gw[Symbol.asyncDispose]();
    kv.close();
  }
});

Deno.test("admin changes the store cannot take are a 503 with retry-after, never a 500", async () => {
  await using upstream = fakeUpstream();
  const { gw, kv, flaky } = await gateway(upstream.url);
  try {
    const created = await (await gw.admin("POST", "/admin/tokens", { group: "default" })).json();
    flaky.conflicting = true;
    const patched = await gw.admin("PATCH", `/admin/tokens/${created.token.id}`, { name: "renamed" });
    assert.equal(patched.status, 503);
    assert.equal(patched.headers.get("retry-after"), "1");
    assert.equal((await patched.json()).error.code, "service_unavailable");
    flaky.conflicting = false;
    flaky.busy = true;
    const group = await gw.admin("POST", "/admin/groups", { name: "new", listing: "openai", models: ["gpt-test"] });
    assert.equal(group.status, 503);
    await group.body?.cancel();
    flaky.busy = false;
    assert.ok(!gw.logs.some((line) => line.event === "internal_error"));
    assert.equal((await gw.store.getToken(created.token.id))?.name, created.token.name);
  } finally {
    await gw[Symbol.asyncDispose]();
    kv.close();
  }
});

Deno.test("store races answer 409: a token made or moved into a group deleted meanwhile, a group created twice", async () => {
  await using upstream = fakeUpstream();
  const { gw, kv } = await gateway(upstream.url);
  try {
    const err = await gw.store.createToken({ group: "gone" }).catch((e) => e);
    assert.equal(err.status, 409);
    assert.match(err.message, /no group "gone"/);
    const { record } = await gw.store.createToken({ group: "default" });
    const moved = await gw.store.updateToken(record.id, { group: "gone" }).catch((e) => e);
    assert.equal(moved.status, 409);
    assert.equal((await gw.store.getToken(record.id))?.group, "default");
    const group = { name: "twice", listing: "openai" as const, models: ["gpt-test"] };
    const [a, b] = await Promise.all([gw.store.createGroup(group), gw.store.createGroup(group)]);
    assert.deepEqual([a, b].sort(), [false, true]);
    const again = await gw.admin("POST", "/admin/groups", group);
    assert.equal(again.status, 409);
    await again.body?.cancel();
    await gw.admin("DELETE", "/admin/groups/twice").then((res) => res.body?.cancel());
    assert.equal(await gw.store.deleteGroup("twice"), false, "a group deleted by another writer is gone, not an error");
  } finally {
    await gw[Symbol.asyncDispose]();
    kv.close();
  }
});

Deno.test("the response store and the models' first-served dates write through a busy KV once it frees up", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const flaky = flakyKv(kv);
    const logs: Record<string, unknown>[] = [];
    const writes = createKvWriter({ log: (line) => logs.push(line), sleep: () => Promise.resolve() });
    const store = responseStore(kv, { days: 1, now: () => 0, writes });
    flaky.busyNext = 5;
    await store.save("tok_1", { response: { id: "resp_1", output: [] }, input: [], chain: [] });
    const [loaded] = await store.load("tok_1", ["resp_1"]);
    assert.equal(loaded?.response.id, "resp_1");
    flaky.busyNext = 5;
    const dates = await recordFirstServed(kv, ["m1"], new Date("2026-03-01T00:00:00Z"), { writes });
    assert.equal(dates.get("m1"), "2026-03-01T00:00:00.000Z");
    assert.equal(flaky.refused, 10);
    assert.equal(logs.length, 0, "nothing gave up");
    flaky.busy = true;
    const err = await store.save("tok_1", { response: { id: "resp_2", output: [] }, input: [], chain: [] })
      .catch((e) => e);
    assert.equal(err.status, 503);
    assert.deepEqual(logs.map((line) => line.operation), ["response_store"]);
  } finally {
    kv.close();
  }
});

/**
 * The sweep of native batches: a batch nobody reads after it is made is still counted once it ends (each request at
 * the batch price, its token, group and model), asked about once per interval while it runs and no more once counted;
 * two gateways sweeping one KV at once, or a client reading while the sweep does, count each request once; a batch
 * whose token was revoked is counted all the same; the gateway sweeps on its own, and its stop lets a sweep end.
 */
import assert from "node:assert/strict";
import { BATCH_KEYS, batchRig, chatLines } from "../_batch_rig.ts";
import { startGateway, type TestGateway } from "../_helpers.ts";

const ask = (id: string, model: string) => ({
  custom_id: id,
  params: { model, max_tokens: 100, messages: [{ role: "user" as const, content: id }] },
});

type Row = Record<string, unknown>;

const counted = (gw: TestGateway, route: string) =>
  gw.exchanges.filter((e) => e.route === route && e.usage).map((e) => [e.request_id, e.model, e.token_id, e.group]);

async function usageByModel(gw: TestGateway): Promise<Record<string, unknown[]>> {
  await gw.flush();
  const byModel = await (await gw.admin("GET", "/admin/usage?by=model&since=1d")).json();
  return Object.fromEntries(byModel.data.map((r: Row) => [r.key, [r.requests, r.input_tokens, r.cost]]));
}

/** How many times the fake was asked for a batch's state or its results. */
const asked = (rig: { api: { seen: { method: string; path: string }[] } }, id: string) =>
  rig.api.seen.filter((s) => s.method === "GET" && s.path.includes(id)).length;

Deno.test("sweep: an Anthropic batch nobody reads after creating it is counted once it ends, at the batch price", async () => {
  await using rig = await batchRig({ gateway: { admin: true, batches: {} } });
  const sweep = rig.gw.sweep!;
  const made = await rig.anthropic().messages.batches.create({
    requests: [ask("a", "claude-batch"), ask("b", "claude-2")],
  });
  const tokenId = (await rig.gw.store.findToken(rig.token))?.id;
  // Still running: asked about once, nothing counted; not asked again before the interval has passed.
  assert.equal(await sweep.sweep(), 1);
  assert.equal(await sweep.sweep(), 0);
  assert.deepEqual(counted(rig.gw, "/v1/messages/batches"), []);
  rig.api.advance();
  rig.clock.now += 60_000;
  assert.equal(await sweep.sweep(), 1);
  assert.deepEqual(counted(rig.gw, "/v1/messages/batches").sort(), [
    [`${made.id}/a`, "claude-batch", tokenId, "default"],
    [`${made.id}/b`, "claude-2", tokenId, "default"],
  ]);
  // 1000 input at 1.5 and 500 output at 7.5 per million: half of 3 and 15.
  assert.deepEqual((await usageByModel(rig.gw))["claude-batch"], [1, 1000, "0.00525"]);
  // Counted: out of the queue (no more calls to the provider), and the owner reading it later counts nothing more.
  const calls = asked(rig, made.id);
  rig.clock.now += 60_000;
  assert.equal(await sweep.sweep(), 0);
  assert.equal(asked(rig, made.id), calls);
  await rig.anthropic().messages.batches.retrieve(made.id);
  assert.equal(counted(rig.gw, "/v1/messages/batches").length, 2);
});

Deno.test("sweep: an OpenAI batch nobody reads after creating it is counted once it completes", async () => {
  await using rig = await batchRig({ gateway: { admin: true, batches: {} } });
  const client = rig.openai();
  const lines = new File([chatLines(["a", "b", "fail-c"])], "in.jsonl");
  const file = await client.files.create({ file: lines, purpose: "batch" });
  const body = { input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" } as const;
  const made = await client.batches.create(body);
  rig.api.advance();
  rig.api.advance();
  assert.equal(await rig.gw.sweep!.sweep(), 1);
  assert.deepEqual(counted(rig.gw, "/v1/batches").map(([id]) => id).sort(), [`${made.id}/a`, `${made.id}/b`]);
  // Two answered requests: 1000 input at batch_input 0.5 and 500 output at half of 8 per million each.
  assert.deepEqual((await usageByModel(rig.gw))["gpt-batch"], [2, 2000, "0.005"]);
  // The output file became the owner's, as when the owner reads the batch.
  const done = await client.batches.retrieve(made.id);
  assert.equal((await client.files.retrieve(done.output_file_id!)).purpose, "batch_output");
  assert.equal(counted(rig.gw, "/v1/batches").length, 2);
});

Deno.test("sweep: two gateways sweeping one KV at once count each request once", async () => {
  await using kv = await Deno.openKv(":memory:");
  await using rig = await batchRig({ gateway: { admin: true, kv, batches: { instance: "one" } } });
  await using second = await startGateway(rig.api.url, {
    configYaml: rig.configYaml,
    env: BATCH_KEYS,
    kv,
    now: () => new Date(rig.clock.now),
    batches: { instance: "two" },
  });
  const client = rig.anthropic();
  const ids: string[] = [];
  for (let n = 0; n < 6; n++) {
    ids.push((await client.messages.batches.create({ requests: [ask(`q${n}`, "claude-batch")] })).id);
  }
  rig.api.advance();
  const [one, two] = await Promise.all([rig.gw.sweep!.sweep(), second.sweep!.sweep()]);
  assert.equal(one + two, ids.length, "each batch asked about by one of them");
  const all = [...counted(rig.gw, "/v1/messages/batches"), ...counted(second, "/v1/messages/batches")];
  assert.deepEqual(all.map(([id]) => id).sort(), ids.map((id, n) => `${id}/q${n}`).sort());
  await second.flush();
  assert.deepEqual((await usageByModel(rig.gw))["claude-batch"], [6, 6000, "0.0315"]);
});

Deno.test("sweep: the owner reading a batch while the sweep counts it counts each request once", async () => {
  await using rig = await batchRig({ gateway: { batches: {} } });
  const client = rig.anthropic();
  const made = [];
  for (let n = 0; n < 4; n++) made.push(await client.messages.batches.create({ requests: [ask("x", "claude-batch")] }));
  rig.api.advance();
  await Promise.all([rig.gw.sweep!.sweep(), ...made.map((batch) => client.messages.batches.retrieve(batch.id))]);
  const ids = counted(rig.gw, "/v1/messages/batches").map(([id]) => id).sort();
  assert.deepEqual(ids, made.map((batch) => `${batch.id}/x`).sort());
});

Deno.test("sweep: a batch whose token was revoked after making it is still counted, since its owner can read it no more", async () => {
  await using rig = await batchRig({ gateway: { batches: {} } });
  const client = rig.anthropic();
  const made = await client.messages.batches.create({ requests: [ask("r", "claude-batch")] });
  const token = await rig.gw.store.findToken(rig.token);
  await rig.gw.store.revokeToken(token!.id);
  rig.api.advance();
  await assert.rejects(client.messages.batches.retrieve(made.id), (err: Error & { status?: number }) => {
    assert.equal(err.status, 401);
    return true;
  });
  assert.equal(await rig.gw.sweep!.sweep(), 1);
  assert.deepEqual(counted(rig.gw, "/v1/messages/batches"), [[`${made.id}/r`, "claude-batch", token!.id, "default"]]);
});

Deno.test("sweep: the gateway sweeps on its own every batches.sweep_ms, and its stop lets the sweep under way end", async () => {
  const resultsAsked = Promise.withResolvers<void>();
  const watching: typeof fetch = (input, init) => {
    if (String(input instanceof Request ? input.url : input).endsWith("/results")) resultsAsked.resolve();
    return fetch(input, init);
  };
  await using rig = await batchRig({
    extraYaml: "batches: { sweep_ms: 1000 }",
    gateway: { batches: {}, fetch: watching },
  });
  const made = await rig.anthropic().messages.batches.create({ requests: [ask("t", "claude-batch")] });
  rig.api.advance();
  const deadline = AbortSignal.timeout(20_000);
  await new Promise<void>((resolve, reject) => {
    deadline.addEventListener("abort", () => reject(new Error("the gateway never swept on its own")));
    resultsAsked.promise.then(resolve);
  });
  await rig.gw.sweep!.stop();
  assert.deepEqual(counted(rig.gw, "/v1/messages/batches").map(([id]) => id), [`${made.id}/t`]);
});

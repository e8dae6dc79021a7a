/**
 * Usage and spend of native batches: each request recorded once when the results are in (however often the batch is
 * read), with its token, group and public model, at the batch price (the deployment's batch_input / batch_output, else
 * half its price); a budget checked at create time against the batch's largest possible cost.
 */
import assert from "node:assert/strict";
import { toFile } from "openai";
import { batchRig, chatLines } from "../_batch_rig.ts";

const ask = (id: string, model: string, max_tokens = 100) => ({
  custom_id: id,
  params: { model, max_tokens, messages: [{ role: "user" as const, content: id }] },
});

type Row = Record<string, unknown>;

Deno.test("batch usage: each Anthropic request once, at half the deployment's price", async () => {
  await using rig = await batchRig({ gateway: { admin: true } });
  const client = rig.anthropic();
  const made = await client.messages.batches.create({ requests: [ask("a", "claude-batch"), ask("b", "claude-2")] });
  rig.api.advance();
  await client.messages.batches.retrieve(made.id);
  await client.messages.batches.retrieve(made.id);
  for await (const _ of await client.messages.batches.results(made.id)) { /* read to the end */ }
  const recorded = rig.gw.exchanges.filter((e) => e.route === "/v1/messages/batches" && e.usage);
  assert.deepEqual(recorded.map((e) => [e.model, e.upstream, e.usage?.input_tokens, e.usage?.output_tokens]).sort(), [
    ["claude-2", "anth", 1000, 500],
    ["claude-batch", "anth", 1000, 500],
  ]);
  assert.equal(recorded[0].group, "default");
  await rig.gw.flush();
  const byModel = await (await rig.gw.admin("GET", "/admin/usage?by=model&since=1d")).json();
  const rows = Object.fromEntries(byModel.data.map((r: Row) => [r.key, [r.requests, r.cost]]));
  // 1000 input at 1.5 and 500 output at 7.5 per million: half of 3 and 15.
  assert.deepEqual(rows["claude-batch"], [1, "0.00525"]);
  assert.deepEqual(rows["claude-2"], [1, "0"]);
});

Deno.test("batch usage: OpenAI requests at batch_input where the config names it, half the output price otherwise", async () => {
  await using rig = await batchRig({ gateway: { admin: true } });
  const client = rig.openai();
  const text = chatLines(["a", "b", "fail-c"]);
  const file = await client.files.create({
    file: await toFile(new TextEncoder().encode(text), "in.jsonl"),
    purpose: "batch",
  });
  const made = await client.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  });
  rig.api.advance();
  rig.api.advance();
  assert.equal((await client.batches.retrieve(made.id)).status, "completed");
  await client.batches.retrieve(made.id);
  await rig.gw.flush();
  const byModel = await (await rig.gw.admin("GET", "/admin/usage?by=model&since=1d")).json();
  const rows = Object.fromEntries(byModel.data.map((r: Row) => [r.key, [r.requests, r.input_tokens, r.cost]]));
  // Two answered requests: 1000 input at 0.5 and 500 output at 4 per million each.
  assert.deepEqual(rows["gpt-batch"], [2, 2000, "0.005"]);
});

Deno.test("batch budget: a batch whose largest cost does not fit the budget is refused whole; one that fits is made", async () => {
  // Largest cost of one request: ~10 prompt tokens at 1.5 and 1000 output at 7.5 per million, about 0.0075.
  await using rig = await batchRig({ groupLimits: "{ cost_per_day: 0.02 }" });
  const client = rig.anthropic();
  const three = [ask("a", "claude-batch", 1000), ask("b", "claude-batch", 1000), ask("c", "claude-batch", 1000)];
  await assert.rejects(client.messages.batches.create({ requests: three }), (err: Error & { status?: number }) => {
    assert.equal(err.status, 429);
    assert.match(err.message, /budget cost_per_day = 0\.02 USD/);
    return true;
  });
  assert.equal(rig.api.seen.filter((s) => s.path.endsWith("/messages/batches")).length, 0, "nothing was made");
  const made = await client.messages.batches.create({ requests: three.slice(0, 2) });
  assert.equal(made.processing_status, "in_progress");
});

/**
 * Operators see every batch, whoever made it: the admin API's listing (state, counts, owner, models, deployment,
 * age) and cancel (recorded in the audit trail as batch.cancel), the CLI's `batch list` and `batch cancel` on the
 * same KV, and clients' tokens refused there.
 */
import assert from "node:assert/strict";
import { parseArgs } from "../../src/cli/args.ts";
import { runCli } from "../../src/cli/commands.ts";
import { BATCH_KEYS, batchRig, chatLines } from "../_batch_rig.ts";

const REQUEST = {
  custom_id: "a",
  params: { model: "claude-batch", max_tokens: 5, messages: [{ role: "user" as const, content: "hi" }] },
};

Deno.test("admin API: every token's batches are listed with state, counts, owner, models and age, and any can be cancelled", async () => {
  await using rig = await batchRig({ gateway: { admin: true } });
  const anthropic = await rig.anthropic().messages.batches.create({ requests: [REQUEST] });
  const file = await rig.openai(rig.other).files.create({
    file: new File([chatLines(["x", "y"])], "in.jsonl"),
    purpose: "batch",
  });
  const openai = await rig.openai(rig.other).batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  });
  rig.clock.now += 90_000;
  const listed = await (await rig.gw.admin("GET", "/admin/batches")).json();
  const byId = Object.fromEntries(listed.data.map((b: { id: string }) => [b.id, b]));
  assert.deepEqual(Object.keys(byId).sort(), [anthropic.id, openai.id].sort());
  const a = byId[anthropic.id];
  assert.deepEqual([a.protocol, a.state, a.counts.processing, a.models, a.runs_on, a.age_seconds], [
    "anthropic",
    "in_progress",
    1,
    ["claude-batch"],
    "anth",
    90,
  ]);
  const o = byId[openai.id];
  assert.deepEqual([o.protocol, o.state, o.counts.total, o.models, o.runs_on], ["openai", "validating", 2, [
    "gpt-batch",
  ], "oai"]);
  assert.notEqual(a.token, o.token, "each batch names its own token");
  const cancel = await rig.gw.admin("POST", `/admin/batches/${anthropic.id}/cancel`);
  assert.equal(cancel.status, 200);
  assert.equal((await cancel.json()).state, "canceling");
  assert.equal((await rig.anthropic().messages.batches.retrieve(anthropic.id)).processing_status, "canceling");
  const trail = await (await rig.gw.admin("GET", "/admin/audit?action=batch.cancel")).json();
  assert.deepEqual(trail.data.map((r: { target: string }) => r.target), [anthropic.id]);
  const missing = await rig.gw.admin("POST", "/admin/batches/msgbatch_nope/cancel");
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  const client = await rig.gw.admin("GET", "/admin/batches", undefined, { authorization: `Bearer ${rig.token}` });
  assert.equal(client.status, 401);
  await client.body?.cancel();
});

Deno.test("CLI: batch list and batch cancel on the gateway's KV", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate_batch_cli_" });
  const kvPath = `${dir}/kv.sqlite`;
  const kv = await Deno.openKv(kvPath);
  try {
    await using rig = await batchRig({ gateway: { kv } });
    await Deno.writeTextFile(`${dir}/gateway.yaml`, rig.configYaml);
    const made = await rig.anthropic().messages.batches.create({ requests: [REQUEST] });
    const env: Record<string, string> = { ...BATCH_KEYS, MODELGATE_KV: kvPath };
    const cli = async (line: string) => {
      const out: string[] = [];
      const err: string[] = [];
      const io = {
        out: (t: string) => void out.push(t),
        err: (t: string) => void err.push(t),
        env: (n: string) => env[n],
      };
      const code = await runCli(parseArgs([...line.split(" "), "--config", `${dir}/gateway.yaml`]), io);
      return { code, out: out.join("\n"), err: err.join("\n") };
    };
    const listed = await cli("batch list");
    assert.equal(listed.code, 0, listed.err);
    assert.match(listed.out, new RegExp(`${made.id}\\s+anthropic\\s+in_progress\\s+processing=1`));
    const json = await cli("batch cancel --json " + made.id);
    assert.equal(json.code, 0, json.err);
    assert.equal(JSON.parse(json.out)[0].state, "canceling");
    rig.api.advance();
    const after = JSON.parse((await cli("batch list --json")).out);
    assert.equal(after[0].state, "ended");
    assert.equal(after[0].counts.canceled, 1);
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * OpenAI's Files and Batch APIs through the gateway with the official SDK onto a fake OpenAI that keeps files and
 * batches per account: files.create streamed through, batches.create with the input file's aliases mapped in a copy,
 * polling to completed, the output and error files read by the owner and matched by custom_id; a second token's 404s
 * and empty listings.
 */
import assert from "node:assert/strict";
import { toFile } from "openai";
import { batchRig, chatLines } from "../_batch_rig.ts";

const upload = (text: string) => toFile(new TextEncoder().encode(text), "input.jsonl");

Deno.test("OpenAI batches: the SDK uploads, creates, polls to completed and reads the output matched by custom_id", async () => {
  await using rig = await batchRig();
  const client = rig.openai();
  const file = await client.files.create({ file: await upload(chatLines(["a", "b", "fail-c"])), purpose: "batch" });
  assert.equal(file.purpose, "batch");
  assert.equal((await client.files.retrieve(file.id)).id, file.id);
  assert.equal(await (await client.files.content(file.id)).text(), chatLines(["a", "b", "fail-c"]));
  const made = await client.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
    metadata: { job: "nightly" },
  });
  assert.equal(made.input_file_id, file.id, "the client sees the file it named");
  const sent = rig.api.seen.find((s) => s.method === "POST" && s.path === "/openai/v1/batches")!;
  const upstreamInput = JSON.parse(sent.body!).input_file_id;
  assert.notEqual(upstreamInput, file.id, "the alias needed a copy of the file");
  const copy = rig.api.accounts.get("team")!.files.get(upstreamInput)!;
  assert.ok(new TextDecoder().decode(copy.content).includes('"model":"gpt-up-1"'));
  let batch = made;
  for (let step = 0; step < 5 && batch.status !== "completed"; step++) {
    rig.api.advance();
    batch = await client.batches.retrieve(made.id);
  }
  assert.equal(batch.status, "completed");
  assert.deepEqual(batch.request_counts, { total: 3, completed: 2, failed: 1 });
  const output = await (await client.files.content(batch.output_file_id!)).text();
  const answers = Object.fromEntries(
    output.trim().split("\n").map((line) => JSON.parse(line)).map((
      l,
    ) => [l.custom_id, l.response.body.choices[0].message.content]),
  );
  assert.deepEqual(answers, { a: "answer to a", b: "answer to b" });
  const errors = await (await client.files.content(batch.error_file_id!)).text();
  assert.equal(JSON.parse(errors.trim()).custom_id, "fail-c");
  assert.deepEqual((await client.batches.list()).data.map((b) => b.id), [made.id]);
  const listed = (await client.files.list()).data.map((f) => f.id);
  assert.deepEqual(listed, [batch.error_file_id, batch.output_file_id, file.id], "the batch's files are the owner's");
});

Deno.test("OpenAI batches: cancel moves the batch to cancelled", async () => {
  await using rig = await batchRig();
  const client = rig.openai();
  const file = await client.files.create({ file: await upload(chatLines(["a"])), purpose: "batch" });
  const made = await client.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  });
  assert.equal((await client.batches.cancel(made.id)).status, "cancelling");
  rig.api.advance();
  assert.equal((await client.batches.retrieve(made.id)).status, "cancelled");
});

Deno.test("OpenAI files and batches: another token of the same group gets 404s and empty listings", async () => {
  await using rig = await batchRig();
  const client = rig.openai();
  const file = await client.files.create({ file: await upload(chatLines(["a"])), purpose: "batch" });
  const made = await client.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  });
  const stranger = rig.openai(rig.other);
  for (
    const call of [
      () => stranger.files.retrieve(file.id),
      () => stranger.files.content(file.id),
      () => stranger.files.delete(file.id),
      () => stranger.batches.retrieve(made.id),
      () => stranger.batches.cancel(made.id),
      () =>
        stranger.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
    ]
  ) {
    await assert.rejects(call(), (err: Error & { status?: number }) => err.status === 404);
  }
  assert.deepEqual((await stranger.files.list()).data, []);
  assert.deepEqual((await stranger.batches.list()).data, []);
  assert.equal((await client.files.delete(file.id)).deleted, true);
  await assert.rejects(client.files.retrieve(file.id), (err: Error & { status?: number }) => err.status === 404);
});

/**
 * Anthropic's Files API through the gateway with the official SDK (beta.files upload, list, retrieve, delete), and
 * requests naming a file id sent to the deployment holding it: a Messages document of source type file (though
 * another deployment is tried first for the model otherwise), a Responses input_file; another token's file id is the
 * provider's 404 and never leaves the gateway.
 */
import assert from "node:assert/strict";
import { toFile } from "@anthropic-ai/sdk";
import { toFile as openaiFile } from "openai";
import { batchRig } from "../_batch_rig.ts";

const BETA = ["files-api-2025-04-14" as const];

Deno.test("Anthropic files: the SDK uploads, lists, reads metadata and deletes; another token sees none of it", async () => {
  await using rig = await batchRig();
  const client = rig.anthropic();
  const file = await client.beta.files.upload({
    file: await toFile(new TextEncoder().encode("notes"), "notes.txt", { type: "text/plain" }),
    betas: BETA,
  });
  assert.equal(file.filename, "notes.txt");
  const upload = rig.api.seen.find((s) => s.method === "POST" && s.path.startsWith("/anthropic/v1/files"))!;
  assert.equal(upload.headers.get("x-api-key"), "anth-team-key");
  assert.match(upload.headers.get("anthropic-beta")!, /files-api-2025-04-14/);
  assert.deepEqual((await client.beta.files.list({ betas: BETA })).data.map((f) => f.id), [file.id]);
  assert.equal((await client.beta.files.retrieveMetadata(file.id, { betas: BETA })).size_bytes, 5);
  const stranger = rig.anthropic(rig.other);
  assert.deepEqual((await stranger.beta.files.list({ betas: BETA })).data, []);
  await assert.rejects(
    stranger.beta.files.retrieveMetadata(file.id, { betas: BETA }),
    (err: Error & { status?: number }) => err.status === 404,
  );
  assert.deepEqual(await client.beta.files.delete(file.id, { betas: BETA }), { id: file.id, type: "file_deleted" });
  assert.deepEqual((await client.beta.files.list({ betas: BETA })).data, []);
});

Deno.test("Anthropic files: a message naming the file id goes to the deployment holding it", async () => {
  await using rig = await batchRig();
  const client = rig.anthropic();
  const plain = await client.messages.create({
    model: "claude-batch",
    max_tokens: 10,
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(plain.type, "message");
  assert.equal(
    rig.api.seen.at(-1)!.headers.get("x-api-key"),
    "anth-other-key",
    "without a file, anth-b is tried first",
  );
  const file = await client.beta.files.upload({
    file: await toFile(new TextEncoder().encode("%PDF-1.4"), "doc.pdf", { type: "application/pdf" }),
    betas: BETA,
  });
  const content = [
    { type: "document" as const, source: { type: "file" as const, file_id: file.id } },
    { type: "text" as const, text: "Summarize" },
  ];
  const answer = await client.beta.messages.create({
    model: "claude-batch",
    max_tokens: 10,
    betas: BETA,
    messages: [{ role: "user", content }],
  });
  assert.deepEqual(answer.content, [{ type: "text", text: "read 1 files" }]);
  assert.equal(rig.api.seen.at(-1)!.headers.get("x-api-key"), "anth-team-key");
  const before = rig.api.seen.length;
  const stranger = rig.anthropic(rig.other);
  await assert.rejects(
    stranger.beta.messages.create({
      model: "claude-batch",
      max_tokens: 10,
      betas: BETA,
      messages: [{ role: "user", content }],
    }),
    (err: Error & { status?: number }) => err.status === 404,
  );
  assert.equal(rig.api.seen.length, before, "another token's file id goes nowhere");
});

Deno.test("OpenAI files: a Responses input_file names a user_data file, and goes to the account holding it", async () => {
  await using rig = await batchRig();
  const client = rig.openai();
  const file = await client.files.create({
    file: await openaiFile(new TextEncoder().encode("%PDF-1.4"), "doc.pdf"),
    purpose: "user_data",
  });
  const input = [{
    role: "user" as const,
    content: [{ type: "input_file" as const, file_id: file.id }, { type: "input_text" as const, text: "Summarize" }],
  }];
  const answer = await client.responses.create({ model: "gpt-resp", input });
  assert.equal(answer.status, "completed");
  const sent = rig.api.seen.at(-1)!;
  assert.equal(sent.path, "/openai/v1/responses");
  assert.ok(sent.body!.includes(file.id));
  await assert.rejects(
    rig.openai(rig.other).responses.create({ model: "gpt-resp", input }),
    (err: Error & { status?: number }) => err.status === 404,
  );
});

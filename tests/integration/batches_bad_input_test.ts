/**
 * Bad batch input gets the protocol's error naming the field or line, and nothing is made upstream: Anthropic's
 * inline requests and OpenAI's input file lines alike (malformed, unknown endpoint, empty, past batches.max_requests
 * or batches.max_bytes, a duplicated or malformed custom_id, a model the group lacks, another token's file id, a
 * model with no native batch path while no runner is built in).
 */
import assert from "node:assert/strict";
import { batchRig, chatLines } from "../_batch_rig.ts";

const BOUNDS = "batches: { max_requests: 3, max_bytes: 2048 }";
const ask = (id: string, model = "claude-batch", extra: Record<string, unknown> = {}) => ({
  custom_id: id,
  params: { model, max_tokens: 10, messages: [{ role: "user", content: "hi" }], ...extra },
});

const ANTHROPIC_CASES: { name: string; body: unknown; status: number; field: RegExp }[] = [
  { name: "no requests array", body: {}, status: 400, field: /^requests: / },
  { name: "an empty batch", body: { requests: [] }, status: 400, field: /^requests: must hold at least one/ },
  {
    name: "past max_requests",
    body: { requests: ["a", "b", "c", "d"].map((id) => ask(id)) },
    status: 413,
    field: /batches\.max_requests/,
  },
  {
    name: "past max_bytes",
    body: { requests: [ask("a", "claude-batch", { system: "x".repeat(4096) })] },
    status: 413,
    field: /larger than/,
  },
  { name: "a request not an object", body: { requests: [ask("a"), 7] }, status: 400, field: /^requests\[1\]: / },
  {
    name: "a malformed custom_id",
    body: { requests: [ask("has space")] },
    status: 400,
    field: /^requests\[0\]\.custom_id: /,
  },
  {
    name: "a duplicated custom_id",
    body: { requests: [ask("a"), ask("a")] },
    status: 400,
    field: /^requests\[1\]\.custom_id: "a" is used twice/,
  },
  {
    name: "a model the group lacks",
    body: { requests: [ask("a"), ask("b", "claude-secret")] },
    status: 400,
    field: /^requests\[1\]\.params\.model: /,
  },
  {
    name: "a streamed request",
    body: { requests: [ask("a", "claude-batch", { stream: true })] },
    status: 400,
    field: /^requests\[0\]\.params\.stream/,
  },
  {
    name: "a model with no native batch path",
    body: { requests: [ask("a"), ask("b", "llama")] },
    status: 400,
    field: /^requests\[1\]\.params\.model: "llama" cannot be batched here/,
  },
];

for (const { name, body, status, field } of ANTHROPIC_CASES) {
  Deno.test(`Anthropic batch refused: ${name}`, async () => {
    await using rig = await batchRig({ extraYaml: BOUNDS });
    const res = await rig.gw.post("/v1/messages/batches", body, { "x-api-key": rig.token });
    const answer = await res.json();
    assert.equal(res.status, status, JSON.stringify(answer));
    assert.equal(answer.type, "error");
    assert.match(answer.error.message, field);
    assert.equal(rig.api.seen.filter((s) => s.path.includes("/batches")).length, 0, "nothing was made upstream");
  });
}

const LINE = (extra: Record<string, unknown>) =>
  JSON.stringify({
    custom_id: "x",
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "gpt-batch" },
    ...extra,
  });

const OPENAI_CASES: { name: string; file?: string; create?: Record<string, unknown>; status: number; field: RegExp }[] =
  [
    {
      name: "a malformed line",
      file: `${LINE({ custom_id: "a" })}\n{not json\n`,
      status: 400,
      field: /^line 2: is not a JSON object/,
    },
    { name: "a line for another endpoint", file: LINE({ url: "/v1/responses" }), status: 400, field: /^line 1\.url: / },
    { name: "a line that is not a POST", file: LINE({ method: "GET" }), status: 400, field: /^line 1\.method/ },
    {
      name: "a duplicated custom_id",
      file: chatLines(["a", "b", "a"]),
      status: 400,
      field: /^line 3\.custom_id: "a" is used twice/,
    },
    {
      name: "a model the group lacks",
      file: chatLines(["a"], "gpt-secret"),
      status: 400,
      field: /^line 1\.body\.model: /,
    },
    { name: "an empty file", file: "\n", status: 400, field: /^input_file_id: must hold at least one/ },
    { name: "past max_requests", file: chatLines(["a", "b", "c", "d"]), status: 413, field: /batches\.max_requests/ },
    {
      name: "past max_bytes",
      file: chatLines(Array.from({ length: 3 }, (_, i) => `${i}${"y".repeat(60)}`.slice(0, 64))).repeat(8),
      status: 413,
      field: /batches\.max_bytes/,
    },
    {
      name: "an unknown endpoint",
      file: chatLines(["a"]),
      create: { endpoint: "/v1/images/generations" },
      status: 400,
      field: /^endpoint: /,
    },
    {
      name: "a completion window other than 24h",
      file: chatLines(["a"]),
      create: { completion_window: "1h" },
      status: 400,
      field: /^completion_window/,
    },
    { name: "no input file", create: { input_file_id: "" }, status: 400, field: /^input_file_id: / },
    {
      name: "an unknown file",
      create: { input_file_id: "file-nope" },
      status: 404,
      field: /No such File object: file-nope/,
    },
    {
      name: "a model with no native batch path",
      file: chatLines(["a"], "llama"),
      status: 400,
      field: /^line 1\.body\.model: "llama" cannot be batched here/,
    },
  ];

for (const { name, file, create, status, field } of OPENAI_CASES) {
  Deno.test(`OpenAI batch refused: ${name}`, async () => {
    await using rig = await batchRig({ extraYaml: BOUNDS });
    let input = "file-none";
    if (file !== undefined) {
      const form = new FormData();
      form.set("purpose", "batch");
      form.set("file", new File([file], "in.jsonl"));
      const made = await fetch(`${rig.gw.url}/v1/files`, {
        method: "POST",
        body: form,
        headers: { authorization: `Bearer ${rig.token}` },
      });
      input = (await made.json()).id;
    }
    const body = { input_file_id: input, endpoint: "/v1/chat/completions", completion_window: "24h", ...create };
    const res = await rig.gw.post("/v1/batches", body, { "x-api-key": "", authorization: `Bearer ${rig.token}` });
    const answer = await res.json();
    assert.equal(res.status, status, JSON.stringify(answer));
    assert.match(answer.error.message, field);
    assert.equal(rig.api.seen.filter((s) => s.path.endsWith("/batches")).length, 0, "nothing was made upstream");
  });
}

Deno.test("OpenAI batch refused: another token's input file is the provider's 404", async () => {
  await using rig = await batchRig();
  const file = await rig.openai().files.create({ file: new File([chatLines(["a"])], "in.jsonl"), purpose: "batch" });
  const res = await rig.gw.post("/v1/batches", {
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  }, { "x-api-key": "", authorization: `Bearer ${rig.other}` });
  assert.equal(res.status, 404);
  assert.equal((await res.json()).error.message, `No such File object: ${file.id}`);
});

Deno.test("Anthropic batch refused: another token's file id named in a request is a 404 naming the request", async () => {
  await using rig = await batchRig();
  const form = new FormData();
  form.set("file", new File(["doc"], "doc.txt", { type: "text/plain" }));
  const made = await fetch(`${rig.gw.url}/v1/files`, {
    method: "POST",
    body: form,
    headers: { "x-api-key": rig.token, "anthropic-beta": "files-api-2025-04-14" },
  });
  const file = (await made.json()).id;
  const content = [{ type: "document", source: { type: "file", file_id: file } }];
  const body = {
    requests: [{
      custom_id: "a",
      params: { model: "claude-batch", max_tokens: 5, messages: [{ role: "user", content }] },
    }],
  };
  const res = await rig.gw.post("/v1/messages/batches", body, { "x-api-key": rig.other });
  assert.equal(res.status, 404);
  assert.match((await res.json()).error.message, /^requests\[0\]\.params: no such file/);
});

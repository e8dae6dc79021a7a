/**
 * @module Guardrails on native batches, with the official SDKs: a key in an Anthropic batch request's params, or in a
 * line of an OpenAI batch's input file, reaches the provider as its placeholder, and a blocking rule refuses the create
 * (naming the request or line) before the provider gets anything. (A batch the gateway runs itself serves each request through the generate path, guardrails and all.)
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI, { toFile } from "openai";
import { batchRig } from "../_batch_rig.ts";

const KEY = "ghp_ewA7huWJGZdRcWVrjDUcOIGo25MsKxzbpUig";

/** `oai-plain` serves `gpt-up-1` under its own id at the same account as `oai`: a batch of it needs no renamed copy. */
const PLAIN =
  `  - { name: oai-plain, protocol: openai, batch_api: true, base_url: "{api}/openai/v1", api_key_env: OAI_BATCH_KEY,
      models: [gpt-up-1] }`;

function rig(action: string) {
  return batchRig({
    upstreams: PLAIN,
    models: ["gpt-up-1"],
    extraYaml: `guardrails:\n  - { name: no-secrets, detect: [secrets], action: ${action} }\n`,
    // The rig's group line takes its limits as written: the group's rules ride after them.
    groupLimits: "{ requests_per_minute: 100000 }, guardrails: [no-secrets]",
  });
}

const REQUESTS = [{
  custom_id: "one",
  params: {
    model: "claude-batch",
    max_tokens: 100,
    system: `Use ${KEY} for the API`,
    messages: [{ role: "user" as const, content: `token ${KEY}` }],
  },
}];

Deno.test("guardrails on a forwarded batch: the provider gets placeholders; a blocking rule refuses the create", async () => {
  {
    await using masked = await rig("mask");
    await masked.anthropic().messages.batches.create({ requests: REQUESTS });
    const sent = masked.api.seen.find((s) => s.method === "POST" && s.path === "/anthropic/v1/messages/batches")!;
    assert.ok(!sent.body!.includes(KEY));
    assert.equal(sent.body!.match(/\[REDACTED:github_token:[0-9a-f]{6}\]/g)?.length, 2);
    assert.equal(JSON.parse(sent.body!).requests[0].params.model, "claude-up-1");
  }
  await using blocked = await rig("block");
  const refused = await blocked.anthropic().messages.batches.create({ requests: REQUESTS }).catch((err) => err);
  assert.ok(refused instanceof Anthropic.BadRequestError, String(refused));
  assert.match(
    refused.message,
    /requests\[0\]\.params: Refused by guardrail \\?"no-secrets\\?": the request holds github_token/,
  );
  assert.equal(blocked.api.seen.filter((s) => s.path === "/anthropic/v1/messages/batches").length, 0);
});

/** An OpenAI batch input file of `model` whose second line holds the key. */
function keyedLines(model: string): string {
  return [
    { custom_id: "plain", body: { model, messages: [{ role: "user", content: "hello" }] } },
    {
      custom_id: "keyed",
      body: {
        model,
        messages: [{ role: "system", content: `Use ${KEY}` }, { role: "user", content: KEY }],
      },
    },
  ].map((line) => JSON.stringify({ ...line, method: "POST", url: "/v1/chat/completions" })).join("\n") + "\n";
}

const CREATE = { endpoint: "/v1/chat/completions", completion_window: "24h" } as const;

// With an alias the deployment gets a copy anyway; without one, masking alone calls for the copy.
for (const model of ["gpt-batch", "gpt-up-1"]) {
  Deno.test(`guardrails on an OpenAI native batch of ${model}: the deployment's copy of the input file holds placeholders`, async () => {
    await using masked = await rig("mask");
    const client = masked.openai();
    const file = await client.files.create({
      file: await toFile(new TextEncoder().encode(keyedLines(model))),
      purpose: "batch",
    });
    await client.batches.create({ input_file_id: file.id, ...CREATE });
    const sent = masked.api.seen.find((s) => s.method === "POST" && s.path === "/openai/v1/batches")!;
    const copy = masked.api.accounts.get("team")!.files.get(JSON.parse(sent.body!).input_file_id)!;
    const lines = new TextDecoder().decode(copy.content);
    assert.ok(!lines.includes(KEY), "the provider's input file holds the key");
    assert.equal(lines.match(/\[REDACTED:github_token:[0-9a-f]{6}\]/g)?.length, 2);
    assert.match(lines, /"custom_id":"plain".*"content":"hello"/);
    // The caller's own file is theirs as uploaded.
    assert.ok((await (await client.files.content(file.id)).text()).includes(KEY));
  });
}

Deno.test("guardrails on an OpenAI native batch: a blocking rule refuses the batch naming the line, before the provider gets anything", async () => {
  await using blocked = await rig("block");
  const client = blocked.openai();
  const file = await client.files.create({
    file: await toFile(new TextEncoder().encode(keyedLines("gpt-batch"))),
    purpose: "batch",
  });
  const uploads = blocked.api.seen.filter((s) => s.method === "POST" && s.path === "/openai/v1/files").length;
  const refused = await client.batches.create({ input_file_id: file.id, ...CREATE }).catch((err) => err);
  assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
  assert.match(refused.message, /^400 line 2\.body: Refused by guardrail "no-secrets": the request holds github_token/);
  assert.equal(refused.param, "line 2.body");
  assert.ok(!refused.message.includes(KEY));
  assert.equal(blocked.api.seen.filter((s) => s.path === "/openai/v1/batches").length, 0, "the provider got a batch");
  assert.equal(
    blocked.api.seen.filter((s) => s.method === "POST" && s.path === "/openai/v1/files").length,
    uploads,
    "the provider got a copy of the file",
  );
});

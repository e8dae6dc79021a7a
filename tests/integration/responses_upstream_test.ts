/**
 * A Responses client onto an `openai-responses` upstream: passed through, the body as sent with only the model
 * mapped and the provider's answer unchanged, streamed or not; its usage (cached input and reasoning) recorded.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { readSse, within } from "../_helpers.ts";
import { KEYS, responsesRig } from "../_responses_upstream.ts";

/** A Codex-like request that uses every field the provider reads. */
const CODEX_BODY = {
  model: "codex",
  instructions: "You are a coding agent.",
  input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Read notes.txt" }] }],
  tools: [
    { type: "function", name: "read_file", parameters: { type: "object", properties: { path: { type: "string" } } } },
    { type: "custom", name: "apply_patch", format: { type: "grammar", syntax: "lark", definition: "start: /.+/" } },
    { type: "web_search" },
    { type: "local_shell" },
    { type: "image_generation" },
    { type: "file_search", vector_store_ids: ["vs_1"] },
    { type: "code_interpreter", container: { type: "auto" } },
    { type: "tool_search" },
  ],
  tool_choice: "auto",
  parallel_tool_calls: true,
  reasoning: { effort: "high", summary: "auto" },
  include: ["reasoning.encrypted_content"],
  store: false,
  prompt_cache_key: "conv-1",
  service_tier: "priority",
  text: { verbosity: "low" },
  truncation: "auto",
  metadata: { ticket: "T-1" },
  context_management: [{ type: "compaction", compact_threshold: 1000000 }],
};

for (const stream of [false, true]) {
  Deno.test(`a Responses request reaches the provider as sent but for the model, and its answer the client unchanged (stream: ${stream})`, async () => {
    await using rig = await responsesRig();
    const res = await rig.post("/v1/responses", { ...CODEX_BODY, stream });
    assert.equal(res.status, 200);
    const got = await within(res.text(), 5000, "the answer");
    const seen = rig.upstream.requests.at(-1)!;
    assert.equal(seen.path, "/rsp-a/v1/responses");
    assert.deepEqual(seen.body, { ...CODEX_BODY, model: "gpt-codex", stream });
    assert.equal(seen.headers.get("authorization"), `Bearer ${KEYS.TEST_OPENAI_KEY}`);
    assert.ok(!seen.raw.includes(rig.token), "the client's token does not go upstream");
    assert.equal(got, rig.sent.get("POST /rsp-a/v1/responses")!.at(-1), "the answer is the provider's, byte for byte");
  });
}

Deno.test("a passthrough answer's usage is recorded with its cached input and reasoning tokens", async () => {
  await using rig = await responsesRig();
  const res = await rig.post("/v1/responses", { ...CODEX_BODY, stream: true });
  const events = (await within(readSse(res), 5000, "the stream")).map((m) => JSON.parse(m.data));
  const usage = events.at(-1).response.usage;
  await rig.gw.flush();
  const exchange = rig.gw.exchanges.at(-1)!;
  const cached = usage.input_tokens_details.cached_tokens;
  assert.ok(cached > 0);
  assert.deepEqual(exchange.usage, {
    input_tokens: usage.input_tokens - cached,
    output_tokens: usage.output_tokens,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
    reasoning_output_tokens: usage.output_tokens_details.reasoning_tokens,
  });
});

Deno.test("the OpenAI SDK's tool loop on a Responses upstream: reasoning carried by the client, checked by the provider", async () => {
  await using rig = await responsesRig();
  const client = new OpenAI({ apiKey: rig.token, baseURL: `${rig.gw.url}/v1`, maxRetries: 0 });
  const tools = [{
    type: "function" as const,
    name: "read_file",
    parameters: { type: "object", properties: { path: { type: "string" } } },
    strict: false,
  }];
  const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: "Read notes.txt" }];
  // Codex's way: nothing stored, the reasoning carried by the client as encrypted content.
  const turn = {
    model: "gpt-codex",
    tools,
    store: false,
    reasoning: { effort: "medium" as const, summary: "auto" as const },
    include: ["reasoning.encrypted_content" as const],
  };
  const first = await client.responses.create({ ...turn, input });
  const call = first.output.find((item) => item.type === "function_call");
  assert.ok(call && call.type === "function_call");
  input.push(...first.output as OpenAI.Responses.ResponseInputItem[]);
  input.push({ type: "function_call_output", call_id: call.call_id, output: "hi" });
  const stream = client.responses.stream({ ...turn, input });
  const second = await stream.finalResponse();
  assert.equal(second.output_text, "The notes say hi.");
  assert.deepEqual(rig.api["rsp-a"].verified, [0, 1], "the provider verified its own reasoning on the second turn");
});

Deno.test("Codex's session_id header names the request's session in the request log", async () => {
  await using rig = await responsesRig();
  for (const header of ["session_id", "conversation_id"]) {
    const res = await rig.post("/v1/responses", { ...CODEX_BODY, stream: false }, { [header]: `codex-${header}` });
    await res.body?.cancel();
    assert.equal(rig.gw.exchanges.at(-1)!.session_id, `codex-${header}`);
  }
});

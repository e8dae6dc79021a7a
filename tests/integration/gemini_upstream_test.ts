/**
 * @module A Gemini upstream (a fake that checks what the real API checks) behind every client protocol: tool loops
 * whose second turn needs the thought signature back, schemas rewritten into Gemini's subset, thinking first,
 * usage from usageMetadata, count_tokens, and Gemini clients passed through.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { fakeUpstream } from "../_fake_upstream.ts";
import { GEMINI_KEY, geminiResponder, type GeminiTurn, geminiUpstreamYaml } from "../_gemini_upstream.ts";
import { deadlineFetch, readSse, startGateway, type TestGateway } from "../_helpers.ts";

const GEM = "/gem/v1beta/models/gemini-test";
const fetchIt = deadlineFetch();

async function gateway(url: string): Promise<TestGateway & { token: string }> {
  const gw = await startGateway(url, { ...geminiUpstreamYaml(url), env: { TEST_GEMINI_KEY: GEMINI_KEY } });
  return Object.assign(gw, { token: (await gw.store.createToken({ group: "gem" })).secret });
}

function post(gw: TestGateway & { token: string }, path: string, body: unknown): Promise<Response> {
  return fetchIt(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${gw.token}` },
    body: JSON.stringify(body),
  });
}

/** Claude Code's kind of tool schema: keywords Gemini refuses, a $ref, a const and a nullable union. */
const READ_SCHEMA = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  additionalProperties: false,
  properties: {
    file_path: { type: "string", description: "Absolute path" },
    limit: { type: "number", exclusiveMinimum: 0 },
    mode: { const: "text" },
    range: { $ref: "#/$defs/range" },
    encoding: { anyOf: [{ type: "string" }, { type: "null" }] },
    tags: { type: "object", propertyNames: { pattern: "^[a-z]+$" } },
  },
  required: ["file_path"],
  $defs: { range: { type: "object", properties: { from: { type: "integer" } } } },
};

const CALL_TURN: GeminiTurn = {
  parts: [
    { text: "Reading it.", thought: true },
    { text: "Let me read it." },
    { functionCall: { name: "Read", args: { file_path: "/a.txt" } }, thoughtSignature: "c2lnLTE=" },
  ],
  usageMetadata: {
    promptTokenCount: 100,
    cachedContentTokenCount: 60,
    candidatesTokenCount: 10,
    thoughtsTokenCount: 4,
    totalTokenCount: 114,
  },
};
const DONE_TURN: GeminiTurn = { parts: [{ text: "It says hello." }] };

const ASK = { role: "user" as const, content: "What is in /a.txt?" };

Deno.test("an Anthropic client's tool loop onto Gemini: schema rewritten, signature back on the second turn", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(`POST ${GEM}:generateContent`, geminiResponder([CALL_TURN, DONE_TURN]));
  await using gw = await gateway(upstream.url);
  const tools = [{ name: "Read", description: "Read a file", input_schema: READ_SCHEMA }];
  const first = await post(gw, "/v1/messages", { model: "gemini-test", max_tokens: 1000, tools, messages: [ASK] });
  const message = await first.json();
  assert.equal(first.status, 200, JSON.stringify(message));
  assert.deepEqual(message.content.map((b: { type: string }) => b.type), ["thinking", "text", "tool_use"]);
  assert.equal(message.stop_reason, "tool_use");
  assert.deepEqual(message.usage, {
    input_tokens: 40,
    output_tokens: 14,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 60,
  });
  const call = message.content[2];
  assert.match(call.id, /^[a-zA-Z0-9_-]+$/);
  const sent = upstream.requests[0].body!;
  const params = ((sent.tools as Record<string, unknown[]>[])[0].functionDeclarations[0] as Record<string, unknown>)
    .parameters as Record<string, Record<string, unknown>>;
  assert.deepEqual(params.properties.mode, { enum: ["text"], type: "STRING", format: "enum" });
  assert.deepEqual(params.properties.range, { type: "OBJECT", properties: { from: { type: "INTEGER" } } });
  assert.deepEqual(params.properties.encoding, { type: "STRING", nullable: true });
  assert.deepEqual(params.properties.limit, { type: "NUMBER", minimum: 0 });
  assert.deepEqual(params.required, ["file_path"]);
  assert.equal(sent.stream, undefined, "the streaming flag is in the path, not the body");
  const second = await post(gw, "/v1/messages", {
    model: "gemini-test",
    max_tokens: 1000,
    tools,
    messages: [
      ASK,
      { role: "assistant", content: message.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "hello" }] },
    ],
  });
  const answer = await second.json();
  assert.equal(second.status, 200, JSON.stringify(answer));
  assert.deepEqual(answer.content, [{ type: "text", text: "It says hello." }]);
  const history = upstream.requests[1].body!.contents as { role: string; parts: Record<string, unknown>[] }[];
  assert.deepEqual(history[1], {
    role: "model",
    parts: [{ text: "Let me read it." }, {
      functionCall: { name: "Read", args: { file_path: "/a.txt" } },
      thoughtSignature: "c2lnLTE=",
    }],
  });
  assert.deepEqual(history[2], {
    role: "user",
    parts: [{ functionResponse: { name: "Read", response: { output: "hello" } } }],
  });
  assert.deepEqual(gw.exchanges[0].usage, {
    input_tokens: 40,
    output_tokens: 14,
    cache_read_input_tokens: 60,
    cache_creation_input_tokens: 0,
    reasoning_output_tokens: 4,
  });
});

Deno.test("a history from another model gets Google's stand-in signature, so Gemini takes it", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(`POST ${GEM}:generateContent`, geminiResponder([DONE_TURN]));
  await using gw = await gateway(upstream.url);
  const res = await post(gw, "/v1/messages", {
    model: "gemini-test",
    max_tokens: 100,
    messages: [
      ASK,
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_01", name: "Read", input: { file_path: "/a" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_01", content: "hi" }] },
    ],
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.body?.cancel();
  const parts = (upstream.requests[0].body!.contents as { parts: Record<string, unknown>[] }[])[1].parts;
  assert.equal(parts[0].thoughtSignature, "skip_thought_signature_validator");
});

Deno.test("the Anthropic SDK streams from Gemini with thinking first and the call whole", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(`POST ${GEM}:streamGenerateContent`, geminiResponder([CALL_TURN]));
  await using gw = await gateway(upstream.url);
  const client = new Anthropic({ apiKey: gw.token, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const message = await client.messages.stream({
    model: "gemini-test",
    max_tokens: 4000,
    thinking: { type: "enabled", budget_tokens: 2048 },
    tools: [{ name: "Read", input_schema: READ_SCHEMA as Anthropic.Tool.InputSchema }],
    messages: [ASK],
  }).finalMessage();
  assert.deepEqual(message.content.map((b) => b.type), ["thinking", "text", "tool_use"]);
  assert.equal((message.content[0] as Anthropic.ThinkingBlock).thinking, "Reading it.");
  assert.deepEqual((message.content[2] as Anthropic.ToolUseBlock).input, { file_path: "/a.txt" });
  assert.equal(message.stop_reason, "tool_use");
  assert.equal(message.usage.cache_read_input_tokens, 60);
  const sent = upstream.requests[0];
  assert.equal(sent.search, "?alt=sse");
  assert.deepEqual((sent.body!.generationConfig as Record<string, unknown>).thinkingConfig, {
    thinkingBudget: 2048,
    includeThoughts: true,
  });
});

Deno.test("chat and Responses clients complete a tool loop onto Gemini with the signature intact", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(`POST ${GEM}:generateContent`, geminiResponder([CALL_TURN, DONE_TURN, CALL_TURN, DONE_TURN]));
  await using gw = await gateway(upstream.url);
  const fn = { name: "Read", parameters: READ_SCHEMA };
  const chatTools = [{ type: "function", function: fn }];
  const first =
    await (await post(gw, "/v1/chat/completions", { model: "gemini-test", tools: chatTools, messages: [ASK] }))
      .json();
  const toolCall = first.choices[0].message.tool_calls[0];
  const second = await post(gw, "/v1/chat/completions", {
    model: "gemini-test",
    tools: chatTools,
    messages: [ASK, first.choices[0].message, { role: "tool", tool_call_id: toolCall.id, content: "hello" }],
  });
  assert.equal(second.status, 200, await second.clone().text());
  assert.equal((await second.json()).choices[0].message.content, "It says hello.");
  const tools = [{ type: "function", ...fn }];
  const r1 = await (await post(gw, "/v1/responses", { model: "gemini-test", store: false, tools, input: ASK.content }))
    .json();
  const callItem = r1.output.find((item: { type: string }) => item.type === "function_call");
  const r2 = await post(gw, "/v1/responses", {
    model: "gemini-test",
    store: false,
    tools,
    input: [
      { role: "user", content: ASK.content },
      ...r1.output,
      { type: "function_call_output", call_id: callItem.call_id, output: "hello" },
    ],
  });
  const r2body = await r2.json();
  assert.equal(r2.status, 200, JSON.stringify(r2body));
  assert.equal(r2body.output.at(-1).content[0].text, "It says hello.");
  // The second turn of each loop carried Gemini's own signature back, not the stand-in.
  for (const i of [1, 3]) {
    const contents = upstream.requests[i].body!.contents as { parts: Record<string, unknown>[] }[];
    const call = contents.flatMap((c) => c.parts).find((p) => p.functionCall);
    assert.equal(call?.thoughtSignature, "c2lnLTE=", `request ${i}`);
  }
});

Deno.test("a Gemini client passes through to a Gemini upstream without its key; count_tokens counts there", async () => {
  await using upstream = fakeUpstream();
  const responder = geminiResponder([DONE_TURN]);
  upstream.routes.set(`POST ${GEM}:streamGenerateContent`, responder);
  upstream.routes.set(`POST ${GEM}:countTokens`, responder);
  await using gw = await gateway(upstream.url);
  const res = await fetchIt(`${gw.url}/v1beta/models/gemini-test:streamGenerateContent?alt=sse&key=${gw.token}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
  });
  const events = await readSse(res);
  assert.equal(JSON.parse(events[0].data).candidates[0].content.parts[0].text, "It says hello.");
  assert.equal(upstream.requests[0].search, "?alt=sse", "the client's key stays at the gateway");
  assert.equal(gw.exchanges[0].usage?.input_tokens, 20);
  const counted = await post(gw, "/v1/messages/count_tokens", { model: "gemini-test", messages: [ASK] });
  assert.deepEqual(await counted.json(), { input_tokens: 42 });
  const request = upstream.requests[1].body!.generateContentRequest as Record<string, unknown>;
  assert.equal(request.model, "models/gemini-test");
});

Deno.test("a schema Gemini cannot express is a 400 naming the tool and the path", async () => {
  await using upstream = fakeUpstream();
  await using gw = await gateway(upstream.url);
  const schema = {
    type: "object",
    properties: { node: { $ref: "#/$defs/node" } },
    $defs: { node: { type: "object", properties: { child: { $ref: "#/$defs/node" } } } },
  };
  const res = await post(gw, "/v1/messages", {
    model: "gemini-test",
    max_tokens: 10,
    tools: [{ name: "Tree", input_schema: schema }],
    messages: [ASK],
  });
  assert.equal(res.status, 400);
  const error = (await res.json()).error;
  assert.match(error.message, /^tools\[0\]\.input_schema\.properties\.node\.properties\.child: .*recursive.*"Tree"/);
  assert.equal(upstream.requests.length, 0);
});

Deno.test("thoughts that come after the answer has begun are left out of an Anthropic stream", async () => {
  await using upstream = fakeUpstream();
  const late: GeminiTurn = {
    parts: [{ text: "Early.", thought: true }, { text: "Answer." }, { text: "Late.", thought: true }],
  };
  upstream.routes.set(`POST ${GEM}:streamGenerateContent`, geminiResponder([late]));
  await using gw = await gateway(upstream.url);
  const res = await post(gw, "/v1/messages", { model: "gemini-test", max_tokens: 100, stream: true, messages: [ASK] });
  const starts = (await readSse(res)).filter((e) =>
    e.event === "content_block_start" || e.event === "content_block_delta"
  )
    .map((e) => JSON.parse(e.data));
  const thinking = starts.filter((e) => e.delta?.type === "thinking_delta").map((e) => e.delta.thinking);
  assert.deepEqual(thinking, ["Early."]);
  assert.deepEqual(starts.filter((e) => e.content_block).map((e) => e.content_block.type), ["thinking", "text"]);
});

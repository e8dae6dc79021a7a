/**
 * @module Gemini clients over real HTTP onto Anthropic and chat upstreams: generateContent, streamGenerateContent
 * (SSE and the JSON array), countTokens, tools both ways, thought signatures, usage, errors in Google's shape, auth.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { geminiCall as gemini } from "../_gemini_reader.ts";
import { deadlineFetch, fixture, readSse, readText, startGateway } from "../_helpers.ts";

const ANTH = "POST /anth/v1/messages";
const CHAT = "POST /oai/v1/chat/completions";
const fetchIt = deadlineFetch();

const TOOLS = [{
  functionDeclarations: [{
    name: "get_time",
    description: "Current time",
    parameters: { type: "OBJECT", properties: { tz: { type: "STRING", nullable: true } }, required: ["tz"] },
  }],
}];

const ASK = {
  systemInstruction: { parts: [{ text: "Be brief." }] },
  contents: [{ role: "user", parts: [{ text: "What time is it?" }] }],
  tools: TOOLS,
  toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_time"] } },
  generationConfig: { maxOutputTokens: 100, temperature: 1.5, stopSequences: ["END"] },
};

Deno.test("generateContent reaches an Anthropic upstream as Messages and answers with a functionCall", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => jsonReply(JSON.parse(fixture("anthropic/tool_use.json"))));
  await using gw = await startGateway(upstream.url);
  const res = await gemini(gw, "/v1beta/models/claude-test:generateContent", ASK);
  assert.equal(res.status, 200);
  const body = await res.json();
  const sent = upstream.requests[0].body!;
  assert.equal(sent.system, "Be brief.");
  assert.deepEqual(sent.messages, [{ role: "user", content: [{ type: "text", text: "What time is it?" }] }]);
  assert.deepEqual(sent.tools, [{
    name: "get_time",
    description: "Current time",
    input_schema: { type: "object", properties: { tz: { type: ["string", "null"] } }, required: ["tz"] },
  }]);
  assert.deepEqual(sent.tool_choice, { type: "tool", name: "get_time" });
  assert.equal(sent.max_tokens, 100);
  assert.equal(sent.temperature, 1);
  assert.deepEqual(sent.stop_sequences, ["END"]);
  assert.equal(sent.stream, undefined);
  assert.deepEqual(body.candidates[0].content, {
    role: "model",
    parts: [{ text: "Let me check." }, { functionCall: { id: "toolu_1", name: "get_time", args: { tz: "UTC" } } }],
  });
  assert.equal(body.candidates[0].finishReason, "STOP");
  assert.deepEqual(body.usageMetadata, { promptTokenCount: 30, candidatesTokenCount: 12, totalTokenCount: 42 });
  assert.equal(body.modelVersion, "claude-test");
  assert.deepEqual(gw.exchanges[0].usage, {
    input_tokens: 30,
    output_tokens: 12,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  });
  assert.equal(gw.exchanges[0].protocol, "gemini");
});

Deno.test("the function's answer goes back as a tool_result for the call it answers", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => jsonReply(JSON.parse(fixture("anthropic/text.json"))));
  await using gw = await startGateway(upstream.url);
  const res = await gemini(gw, "/v1beta/models/claude-test:generateContent", {
    contents: [
      ASK.contents[0],
      { role: "model", parts: [{ functionCall: { name: "get_time", args: { tz: "UTC" } } }] },
      { role: "user", parts: [{ functionResponse: { name: "get_time", response: { output: "12:00" } } }] },
    ],
    tools: TOOLS,
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const messages = upstream.requests[0].body!.messages as Record<string, unknown>[];
  assert.deepEqual(messages.slice(1), [
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_gm1_0", name: "get_time", input: { tz: "UTC" } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_gm1_0", content: "12:00" }] },
  ]);
});

Deno.test("streamGenerateContent?alt=sse turns Anthropic events into Gemini chunks, usage last", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => sseReply(fixture("anthropic/tool_use.sse")));
  await using gw = await startGateway(upstream.url);
  const res = await gemini(gw, "/v1beta/models/claude-test:streamGenerateContent?alt=sse", ASK);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
  const chunks = (await readSse(res)).map((m) => JSON.parse(m.data));
  assert.equal(upstream.requests[0].body!.stream, true);
  const parts = chunks.flatMap((c) => c.candidates[0].content.parts);
  assert.deepEqual(parts.filter((p) => p.text !== ""), [
    { text: "Let me check." },
    { functionCall: { id: "toolu_1", name: "get_time", args: { tz: "UTC" } } },
  ]);
  const last = chunks.at(-1);
  assert.equal(last.candidates[0].finishReason, "STOP");
  assert.deepEqual(last.usageMetadata, { promptTokenCount: 30, candidatesTokenCount: 12, totalTokenCount: 42 });
  assert.ok(chunks.slice(0, -1).every((c) => c.usageMetadata === undefined && !c.candidates[0].finishReason));
});

Deno.test("streamGenerateContent without alt=sse answers one JSON array, from a chat upstream", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(CHAT, () => sseReply(fixture("openai-chat/tool_use.sse")));
  await using gw = await startGateway(upstream.url);
  const res = await gemini(gw, "/v1beta/models/gpt-test:streamGenerateContent", ASK);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const chunks = JSON.parse(await readText(res));
  assert.ok(Array.isArray(chunks));
  const sent = upstream.requests[0].body!;
  assert.deepEqual(sent.messages, [{ role: "system", content: "Be brief." }, {
    role: "user",
    content: "What time is it?",
  }]);
  assert.deepEqual((sent.tools as Record<string, unknown>[])[0], {
    type: "function",
    function: {
      name: "get_time",
      description: "Current time",
      parameters: { type: "object", properties: { tz: { type: ["string", "null"] } }, required: ["tz"] },
    },
  });
  const parts = chunks.flatMap((c: Record<string, never>) => c.candidates[0]["content"]["parts"]);
  assert.deepEqual(parts.filter((p: { text?: string }) => p.text !== ""), [
    { text: "Let me check." },
    { functionCall: { id: "call_1", name: "get_time", args: { tz: "UTC" } } },
  ]);
  assert.deepEqual(chunks.at(-1).usageMetadata, {
    promptTokenCount: 30,
    candidatesTokenCount: 12,
    totalTokenCount: 42,
  });
});

Deno.test("generateContent onto a chat upstream, whole, with the key as ?key= under /v1", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(CHAT, () => jsonReply(JSON.parse(fixture("openai-chat/tool_use.json"))));
  await using gw = await startGateway(upstream.url);
  const res = await fetchIt(`${gw.url}/v1/models/gpt-test:generateContent?key=${gw.tokens.default}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ASK),
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.deepEqual(body.candidates[0].content.parts, [
    { text: "Let me check." },
    { functionCall: { id: "call_1", name: "get_time", args: { tz: "UTC" } } },
  ]);
  assert.equal(upstream.requests[0].search, "", "the client's key never travels upstream");
  assert.ok(!JSON.stringify(gw.logs).includes(gw.tokens.default), "the key is in no log line");
  assert.ok(!JSON.stringify(gw.exchanges).includes(gw.tokens.default), "nor in the exchange record");
});

Deno.test("thinking comes back as thought parts whose signature restores the block on the next turn", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => sseReply(fixture("anthropic/reasoning.sse")));
  await using gw = await startGateway(upstream.url);
  const config = { thinkingConfig: { thinkingBudget: 2048, includeThoughts: true }, maxOutputTokens: 4096 };
  const res = await gemini(gw, "/v1beta/models/claude-test:streamGenerateContent?alt=sse", {
    contents: ASK.contents,
    generationConfig: config,
  });
  const parts = (await readSse(res)).flatMap((m) => JSON.parse(m.data).candidates[0].content.parts);
  assert.equal(upstream.requests[0].body!.thinking !== undefined, true);
  assert.deepEqual(upstream.requests[0].body!.thinking, { type: "enabled", budget_tokens: 2048 });
  const thoughts = parts.filter((p) => p.thought);
  assert.equal(thoughts.map((p) => p.text).join(""), "Thinking about it.");
  const signed = thoughts.find((p) => p.thoughtSignature);
  assert.ok(signed, "a thought part carries the signature");
  // The client sends the answer back as it got it, in one model turn.
  await (await gemini(gw, "/v1beta/models/claude-test:generateContent", {
    contents: [...ASK.contents, { role: "model", parts }, { role: "user", parts: [{ text: "And?" }] }],
    generationConfig: config,
  })).body?.cancel();
  const second = upstream.requests[1].body!.messages as { role: string; content: unknown[] }[];
  assert.deepEqual(second[1], {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "Thinking about it.", signature: "c2lnbmF0dXJl" },
      { type: "text", text: "42" },
    ],
  });
});

Deno.test("countTokens asks an Anthropic upstream and estimates for a chat one", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages/count_tokens", () => jsonReply({ input_tokens: 17 }));
  await using gw = await startGateway(upstream.url);
  const counted = await gemini(gw, "/v1beta/models/claude-test:countTokens", { contents: ASK.contents });
  assert.deepEqual(await counted.json(), { totalTokens: 17 });
  const sent = upstream.requests[0].body!;
  assert.equal(sent.max_tokens, undefined);
  assert.deepEqual(sent.messages, [{ role: "user", content: [{ type: "text", text: "What time is it?" }] }]);
  const wrapped = await gemini(gw, "/v1beta/models/gpt-test:countTokens", {
    generateContentRequest: { model: "models/gpt-test", contents: ASK.contents },
  });
  const estimate = await wrapped.json();
  assert.equal(typeof estimate.totalTokens, "number");
  assert.ok(estimate.totalTokens > 0);
});

Deno.test("models list and get in Gemini's shape, paged; /v1/models follows the client", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const first = await (await gemini(gw, "/v1beta/models?pageSize=2")).json();
  assert.deepEqual(first.models.map((m: { name: string }) => m.name), ["models/claude-test", "models/alias"]);
  assert.ok(first.models[0].supportedGenerationMethods.includes("generateContent"));
  const rest = await (await gemini(gw, `/v1beta/models?pageSize=10&pageToken=${first.nextPageToken}`)).json();
  assert.deepEqual(rest.models.map((m: { name: string }) => m.name), [
    "models/claude-nokey",
    "models/gpt-test",
    "models/claude-ha",
  ]);
  assert.equal(rest.nextPageToken, undefined);
  const one = await (await gemini(gw, "/v1beta/models/gpt-test")).json();
  assert.equal(one.name, "models/gpt-test");
  const v1 = await (await gemini(gw, "/v1/models")).json();
  assert.equal(v1.models.length, 5);
  const anthropic = await (await fetchIt(`${gw.url}/v1/models`, { headers: { "x-api-key": gw.tokens.default } }))
    .json();
  assert.equal(anthropic.data.length, 5);
  const bad = await gemini(gw, "/v1beta/models?pageToken=nope");
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.status, "INVALID_ARGUMENT");
});

Deno.test("a tool loop with thinking keeps its thinking when the client sends back only the function call", async () => {
  await using upstream = fakeUpstream();
  const thinking = { type: "thinking", thinking: "Need the clock.", signature: "c2lnLTE=" };
  upstream.routes.set(ANTH, (seen) => {
    const messages = seen.body!.messages as { role: string; content: { type: string }[] }[];
    // As the real API checks it: with thinking on, an assistant turn that calls a tool starts with its thinking.
    const unthought = messages.some((m) =>
      m.role === "assistant" && m.content.some((b) => b.type === "tool_use") && m.content[0].type !== "thinking"
    );
    if (seen.body!.thinking && unthought) {
      return jsonReply({ type: "error", error: { type: "invalid_request_error", message: "missing thinking" } }, 400);
    }
    return jsonReply({
      id: "msg_t",
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [thinking, { type: "tool_use", id: "toolu_t", name: "get_time", input: { tz: "UTC" } }],
      stop_reason: "tool_use",
      usage: { input_tokens: 5, output_tokens: 6 },
    });
  });
  await using gw = await startGateway(upstream.url);
  const generationConfig = { maxOutputTokens: 4096, thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } };
  const first = await (await gemini(gw, "/v1beta/models/claude-test:generateContent", {
    contents: ASK.contents,
    tools: TOOLS,
    generationConfig,
  })).json();
  const parts = first.candidates[0].content.parts;
  const call = parts.find((p: { functionCall?: unknown }) => p.functionCall);
  assert.ok(call.thoughtSignature, "the call carries the thinking's signature");
  const second = await gemini(gw, "/v1beta/models/claude-test:generateContent", {
    contents: [
      ...ASK.contents,
      { role: "model", parts: [call] },
      {
        role: "user",
        parts: [{ functionResponse: { id: "toolu_t", name: "get_time", response: { output: "12:00" } } }],
      },
    ],
    tools: TOOLS,
    generationConfig,
  });
  assert.equal(second.status, 200);
  await second.body?.cancel();
  const sent = upstream.requests[1].body!;
  assert.deepEqual(sent.thinking, { type: "enabled", budget_tokens: 2048 });
  assert.deepEqual((sent.messages as { content: unknown[] }[])[1].content[0], thinking);
});

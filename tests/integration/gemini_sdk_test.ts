/**
 * @module The real Google Gen AI SDK pointed at the gateway: list, get, generate, stream, countTokens, an image part
 * and a function-call round trip, onto an Anthropic and a chat upstream, under /v1 (its default) and /v1beta
 * (Gemini CLI's).
 */
import { type FunctionCall, GoogleGenAI, Type } from "@google/genai";
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { fixture, startGateway, within } from "../_helpers.ts";
import { REQUEST_DEADLINE_MS } from "../_reads.ts";

const ANTH = "POST /anth/v1/messages";
const CHAT = "POST /oai/v1/chat/completions";

function client(url: string, token: string, apiVersion?: string): GoogleGenAI {
  // The SDK's own timeout is the request's deadline, body included.
  return new GoogleGenAI({ apiKey: token, httpOptions: { baseUrl: url, apiVersion, timeout: REQUEST_DEADLINE_MS } });
}

/** An SDK call that fails rather than hangs. */
function done<T>(promise: Promise<T>, what: string): Promise<T> {
  return within(promise, REQUEST_DEADLINE_MS, what);
}

const GET_TIME = {
  name: "get_time",
  description: "Current time in a zone",
  parameters: { type: Type.OBJECT, properties: { tz: { type: Type.STRING } }, required: ["tz"] },
};

Deno.test("Gen AI SDK lists and gets the group's models, paging through them", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  for (const version of [undefined, "v1beta"]) {
    const ai = client(gw.url, gw.tokens.default, version);
    const names: string[] = [];
    const pager = await done(ai.models.list({ config: { pageSize: 2 } }), "list");
    for await (const model of pager) names.push(String(model.name));
    assert.deepEqual(names, [
      "models/claude-test",
      "models/alias",
      "models/claude-nokey",
      "models/gpt-test",
      "models/claude-ha",
    ]);
    const one = await done(ai.models.get({ model: "gpt-test" }), "get");
    assert.equal(one.name, "models/gpt-test");
    assert.deepEqual(one.supportedActions, ["generateContent", "streamGenerateContent", "countTokens"]);
  }
});

Deno.test("Gen AI SDK generates, streams and counts on an Anthropic upstream, image part included", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    ANTH,
    (seen) =>
      seen.body?.stream
        ? sseReply(fixture("anthropic/text.sse"))
        : jsonReply(JSON.parse(fixture("anthropic/usage_cache.json"))),
  );
  upstream.routes.set("POST /anth/v1/messages/count_tokens", () => jsonReply({ input_tokens: 21 }));
  await using gw = await startGateway(upstream.url);
  const ai = client(gw.url, gw.tokens.default);
  const whole = await done(
    ai.models.generateContent({
      model: "claude-test",
      contents: [{
        role: "user",
        parts: [{ text: "What is this?" }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }],
      }],
      config: { systemInstruction: "Be brief.", maxOutputTokens: 50 },
    }),
    "generate",
  );
  assert.equal(whole.text, "Cached.");
  assert.equal(whole.candidates?.[0].finishReason, "STOP");
  assert.equal(whole.usageMetadata?.cachedContentTokenCount, 80);
  assert.equal(whole.usageMetadata?.promptTokenCount, 100);
  const sent = upstream.requests[0].body!;
  assert.equal(sent.system, "Be brief.");
  assert.deepEqual((sent.messages as { content: unknown[] }[])[0].content[1], {
    type: "image",
    source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
  });
  const texts: string[] = [];
  const stream = await done(ai.models.generateContentStream({ model: "claude-test", contents: "Hi" }), "stream");
  for await (const chunk of stream) texts.push(chunk.text ?? "");
  assert.equal(texts.join(""), "Héllo, wörld 🌍");
  const counted = await done(ai.models.countTokens({ model: "claude-test", contents: "Hi" }), "count");
  assert.equal(counted.totalTokens, 21);
});

Deno.test("Gen AI SDK completes a function-call round trip on a chat upstream, under /v1beta", async () => {
  await using upstream = fakeUpstream();
  let turn = 0;
  upstream.routes.set(
    CHAT,
    () =>
      ++turn === 1
        ? sseReply(fixture("openai-chat/tool_use.sse"))
        : jsonReply(JSON.parse(fixture("openai-chat/text.json"))),
  );
  await using gw = await startGateway(upstream.url);
  const ai = client(gw.url, gw.tokens.default, "v1beta");
  const config = { tools: [{ functionDeclarations: [GET_TIME] }] };
  const history = [{ role: "user", parts: [{ text: "What time is it?" }] }];
  const calls: FunctionCall[] = [];
  const stream = await done(
    ai.models.generateContentStream({ model: "gpt-test", contents: history, config }),
    "first turn",
  );
  const parts = [];
  for await (const chunk of stream) {
    calls.push(...chunk.functionCalls ?? []);
    parts.push(...chunk.candidates?.[0].content?.parts ?? []);
  }
  assert.deepEqual(calls.map(({ name, args }) => ({ name, args })), [{ name: "get_time", args: { tz: "UTC" } }]);
  const answer = await done(
    ai.models.generateContent({
      model: "gpt-test",
      contents: [
        ...history,
        { role: "model", parts },
        {
          role: "user",
          parts: [{ functionResponse: { id: calls[0].id, name: "get_time", response: { time: "12:00" } } }],
        },
      ],
      config,
    }),
    "second turn",
  );
  assert.equal(answer.text, "Héllo, wörld 🌍");
  const messages = upstream.requests[1].body!.messages as Record<string, unknown>[];
  assert.deepEqual(messages.slice(1), [
    {
      role: "assistant",
      content: "Let me check.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "get_time", arguments: '{"tz":"UTC"}' } }],
    },
    { role: "tool", tool_call_id: "call_1", content: '{"time":"12:00"}' },
  ]);
});

Deno.test("Gen AI SDK reads the gateway's errors as Google's ApiError", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const ai = client(gw.url, "sk-not-a-token");
  await assert.rejects(
    done(ai.models.generateContent({ model: "claude-test", contents: "Hi" }), "refused"),
    (err: Error & { status?: number }) => err.status === 401 && /UNAUTHENTICATED|Invalid/i.test(err.message),
  );
});

/**
 * @module The real Google Gen AI SDK pointed at the gateway: list, get, generate, stream, countTokens, an image part
 * and a function-call round trip, each onto an Anthropic and a chat upstream, under /v1 (its default) and /v1beta
 * (Gemini CLI's).
 */
import { type FunctionCall, GoogleGenAI, type Part, Type } from "@google/genai";
import assert from "node:assert/strict";
import { type FakeUpstream, fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { fixture, startGateway, within } from "../_helpers.ts";
import { REQUEST_DEADLINE_MS } from "../_reads.ts";

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

type Obj = Record<string, unknown>;

/** One upstream the SDK's calls are translated onto, and what each call must have sent it. */
interface UpstreamCase {
  name: string;
  model: string;
  /** The route of its generate endpoint on the fake. */
  route: string;
  /** The directory of its recorded answers under tests/fixtures. */
  fixtures: string;
  /** Sets whatever else the upstream answers (its own token count). */
  extra?: (upstream: FakeUpstream) => void;
  /** The system prompt and the image part of the first request, as the upstream got them. */
  sentPrompt: (body: Obj) => { system: unknown; image: unknown };
  /** The token count the SDK reads, or undefined for the gateway's estimate (any positive count). */
  counted?: number;
  /** The messages of the second turn of the tool loop after the first user message. */
  toolTurn: (body: Obj) => unknown;
  toolTurnWant: unknown;
}

const CASES: UpstreamCase[] = [
  {
    name: "Anthropic",
    model: "claude-test",
    route: "POST /anth/v1/messages",
    fixtures: "anthropic",
    extra: (upstream) =>
      upstream.routes.set("POST /anth/v1/messages/count_tokens", () => jsonReply({ input_tokens: 21 })),
    sentPrompt: (body) => ({
      system: body.system,
      image: (body.messages as { content: unknown[] }[])[0].content[1],
    }),
    counted: 21,
    toolTurn: (body) => (body.messages as unknown[]).slice(1),
    toolTurnWant: [
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_1", name: "get_time", input: { tz: "UTC" } },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: '{"time":"12:00"}' }] },
    ],
  },
  {
    name: "chat",
    model: "gpt-test",
    route: "POST /oai/v1/chat/completions",
    fixtures: "openai-chat",
    sentPrompt: (body) => {
      const messages = body.messages as { role: string; content: unknown }[];
      return { system: messages[0].content, image: (messages[1].content as unknown[])[1] };
    },
    toolTurn: (body) => (body.messages as unknown[]).slice(1),
    toolTurnWant: [
      {
        role: "assistant",
        content: "Let me check.",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_time", arguments: '{"tz":"UTC"}' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: '{"time":"12:00"}' },
    ],
  },
];

/** What the upstream must have received for the image part, per upstream protocol. */
const IMAGE_WANT: Record<string, unknown> = {
  Anthropic: { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
  chat: { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
};

for (const c of CASES) {
  Deno.test(`Gen AI SDK lists and gets ${c.model} (${c.name} upstream), paging, under /v1 and /v1beta`, async () => {
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
      const one = await done(ai.models.get({ model: c.model }), "get");
      assert.equal(one.name, `models/${c.model}`);
      assert.deepEqual(one.supportedActions, ["generateContent", "streamGenerateContent", "countTokens"]);
    }
    assert.equal(upstream.requests.length, 0);
  });

  Deno.test(`Gen AI SDK generates, streams and counts on the ${c.name} upstream, image part included`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set(
      c.route,
      (seen) =>
        seen.body?.stream
          ? sseReply(fixture(`${c.fixtures}/text.sse`))
          : jsonReply(JSON.parse(fixture(`${c.fixtures}/usage_cache.json`))),
    );
    c.extra?.(upstream);
    await using gw = await startGateway(upstream.url);
    for (const version of [undefined, "v1beta"]) {
      upstream.requests.length = 0;
      const ai = client(gw.url, gw.tokens.default, version);
      const whole = await done(
        ai.models.generateContent({
          model: c.model,
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
      assert.deepEqual(c.sentPrompt(upstream.requests[0].body!), { system: "Be brief.", image: IMAGE_WANT[c.name] });
      const texts: string[] = [];
      const stream = await done(ai.models.generateContentStream({ model: c.model, contents: "Hi" }), "stream");
      for await (const chunk of stream) texts.push(chunk.text ?? "");
      assert.equal(texts.join(""), "Héllo, wörld 🌍");
      const counted = await done(ai.models.countTokens({ model: c.model, contents: "Hi" }), "count");
      if (c.counted !== undefined) assert.equal(counted.totalTokens, c.counted);
      else assert.ok((counted.totalTokens ?? 0) > 0, `estimate ${counted.totalTokens}`);
    }
  });

  Deno.test(`Gen AI SDK completes a function-call round trip on the ${c.name} upstream`, async () => {
    await using upstream = fakeUpstream();
    let turn = 0;
    upstream.routes.set(
      c.route,
      () =>
        ++turn % 2 === 1
          ? sseReply(fixture(`${c.fixtures}/tool_use.sse`))
          : jsonReply(JSON.parse(fixture(`${c.fixtures}/text.json`))),
    );
    await using gw = await startGateway(upstream.url);
    for (const version of [undefined, "v1beta"]) {
      upstream.requests.length = 0;
      const ai = client(gw.url, gw.tokens.default, version);
      const config = { tools: [{ functionDeclarations: [GET_TIME] }] };
      const history = [{ role: "user", parts: [{ text: "What time is it?" }] }];
      const calls: FunctionCall[] = [];
      const stream = await done(
        ai.models.generateContentStream({ model: c.model, contents: history, config }),
        "first turn",
      );
      const parts: Part[] = [];
      for await (const chunk of stream) {
        calls.push(...chunk.functionCalls ?? []);
        parts.push(...chunk.candidates?.[0].content?.parts ?? []);
      }
      assert.deepEqual(calls.map(({ name, args }) => ({ name, args })), [{ name: "get_time", args: { tz: "UTC" } }]);
      const answer = await done(
        ai.models.generateContent({
          model: c.model,
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
      assert.equal(answer.candidates?.[0].finishReason, "STOP");
      assert.deepEqual(c.toolTurn(upstream.requests[1].body!), c.toolTurnWant);
    }
  });
}

Deno.test("Gen AI SDK reads the gateway's errors as Google's ApiError", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const ai = client(gw.url, "sk-not-a-token");
  await assert.rejects(
    done(ai.models.generateContent({ model: "claude-test", contents: "Hi" }), "refused"),
    (err: Error & { status?: number }) => err.status === 401 && /UNAUTHENTICATED|Invalid/i.test(err.message),
  );
});

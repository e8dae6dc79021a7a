/**
 * @module Thought signatures Gemini puts on parts other than function calls: a step's signature on a trailing empty
 * text part goes back on its call from every client, streamed or not; a text answer's signature goes back on its text
 * from Anthropic and Responses clients, and never reaches an Anthropic upstream.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { GEMINI_KEY, geminiResponder, type GeminiTurn, geminiUpstreamYaml } from "../_gemini_upstream.ts";
import { deadlineFetch, fixture, startGateway, type TestGateway } from "../_helpers.ts";

const GEM = "/gem/v1beta/models/gemini-test";
const fetchIt = deadlineFetch();
type Obj = Record<string, unknown>;

async function gateway(url: string): Promise<TestGateway & { token: string }> {
  const gw = await startGateway(url, { ...geminiUpstreamYaml(url), env: { TEST_GEMINI_KEY: GEMINI_KEY } });
  return Object.assign(gw, { token: (await gw.store.createToken({ group: "gem" })).secret });
}

async function post(gw: TestGateway, path: string, body: unknown, token: string): Promise<Obj> {
  const res = await fetchIt(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  assert.equal(res.status, 200, JSON.stringify(answer));
  return answer;
}

const ASK = "What is in /a.txt?";
const READ = { name: "Read", input_schema: { type: "object", properties: { file_path: { type: "string" } } } };
const CALL = { functionCall: { name: "Read", args: { file_path: "/a.txt" } } };
/** A step whose signature comes on a trailing empty text part, as Gemini sends it in streams. */
const SPLIT_TURN: GeminiTurn = {
  parts: [{ text: "Let me read it." }, CALL, { text: "", thoughtSignature: "c2lnLTk=" }],
};
const DONE_TURN: GeminiTurn = { parts: [{ text: "It says hello." }] };

/** The function call of the model content in request `i`, as the fake got it. */
function sentCall(upstream: { requests: { body?: Obj }[] }, i: number): Obj | undefined {
  const contents = upstream.requests[i].body!.contents as { parts: Obj[] }[];
  return contents.flatMap((c) => c.parts).find((p) => p.functionCall);
}

Deno.test("a step's signature on a trailing text part goes back on its call, from every client", async () => {
  await using upstream = fakeUpstream();
  const turns = [SPLIT_TURN, DONE_TURN, SPLIT_TURN, DONE_TURN, SPLIT_TURN, DONE_TURN];
  upstream.routes.set(`POST ${GEM}:generateContent`, geminiResponder(turns));
  await using gw = await gateway(upstream.url);
  const m1 = await post(gw, "/v1/messages", {
    model: "gemini-test",
    max_tokens: 100,
    tools: [READ],
    messages: [{ role: "user", content: ASK }],
  }, gw.token);
  const call = (m1.content as Obj[]).find((b) => b.type === "tool_use")!;
  await post(gw, "/v1/messages", {
    model: "gemini-test",
    max_tokens: 100,
    tools: [READ],
    messages: [{ role: "user", content: ASK }, { role: "assistant", content: m1.content }, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: call.id, content: "hello" }],
    }],
  }, gw.token);
  const fn = { name: "Read", parameters: READ.input_schema };
  const c1 = await post(gw, "/v1/chat/completions", {
    model: "gemini-test",
    tools: [{ type: "function", function: fn }],
    messages: [{ role: "user", content: ASK }],
  }, gw.token);
  const message = (c1.choices as { message: { tool_calls: Obj[] } }[])[0].message;
  await post(gw, "/v1/chat/completions", {
    model: "gemini-test",
    tools: [{ type: "function", function: fn }],
    messages: [{ role: "user", content: ASK }, message, {
      role: "tool",
      tool_call_id: message.tool_calls[0].id,
      content: "hello",
    }],
  }, gw.token);
  const tools = [{ type: "function", ...fn }];
  const r1 = await post(gw, "/v1/responses", { model: "gemini-test", store: false, tools, input: ASK }, gw.token);
  const item = (r1.output as Obj[]).find((o) => o.type === "function_call")!;
  await post(gw, "/v1/responses", {
    model: "gemini-test",
    store: false,
    tools,
    input: [{ role: "user", content: ASK }, ...r1.output as Obj[], {
      type: "function_call_output",
      call_id: item.call_id,
      output: "hello",
    }],
  }, gw.token);
  for (const i of [1, 3, 5]) assert.equal(sentCall(upstream, i)?.thoughtSignature, "c2lnLTk=", `request ${i}`);
});

Deno.test("a streamed step's signature on its last, empty text part reaches the call it belongs to", async () => {
  await using upstream = fakeUpstream();
  // One fake API behind both paths, so it knows the signature it gave in the stream.
  const api = geminiResponder([SPLIT_TURN, DONE_TURN]);
  upstream.routes.set(`POST ${GEM}:streamGenerateContent`, api);
  upstream.routes.set(`POST ${GEM}:generateContent`, api);
  await using gw = await gateway(upstream.url);
  const client = new Anthropic({ apiKey: gw.token, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const tools = [READ as Anthropic.Tool];
  const ask = { role: "user" as const, content: ASK };
  const message = await client.messages.stream({ model: "gemini-test", max_tokens: 100, tools, messages: [ask] })
    .finalMessage();
  assert.deepEqual(message.content.map((b) => b.type), ["text", "tool_use"]);
  const call = message.content[1] as Anthropic.ToolUseBlock;
  const answer = await client.messages.create({
    model: "gemini-test",
    max_tokens: 100,
    tools,
    messages: [ask, { role: "assistant", content: message.content }, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: call.id, content: "hello" }],
    }],
  });
  assert.deepEqual(answer.content.map((b) => b.type === "text" && b.text), ["It says hello."]);
  assert.equal(sentCall(upstream, 1)?.thoughtSignature, "c2lnLTk=");
});

Deno.test("a text answer's signature goes back on its text from Anthropic and Responses clients", async () => {
  await using upstream = fakeUpstream();
  const text: GeminiTurn = {
    parts: [{ text: "Plan.", thought: true }, { text: "Hello.", thoughtSignature: "dGV4dC0x" }],
  };
  const plain: GeminiTurn = { parts: [{ text: "Hello.", thoughtSignature: "dGV4dC0y" }] };
  upstream.routes.set(`POST ${GEM}:generateContent`, geminiResponder([text, DONE_TURN, plain, DONE_TURN]));
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(JSON.parse(fixture("anthropic/text.json"))));
  await using gw = await gateway(upstream.url);
  const ask = { role: "user", content: "Hi" };
  const m1 = await post(gw, "/v1/messages", { model: "gemini-test", max_tokens: 100, messages: [ask] }, gw.token);
  assert.deepEqual((m1.content as Obj[]).map((b) => b.type), ["thinking", "text"]);
  const history = [ask, { role: "assistant", content: m1.content }, { role: "user", content: "More" }];
  await post(gw, "/v1/messages", { model: "gemini-test", max_tokens: 100, messages: history }, gw.token);
  const r1 = await post(gw, "/v1/responses", { model: "gemini-test", store: false, input: "Hi" }, gw.token);
  await post(gw, "/v1/responses", {
    model: "gemini-test",
    store: false,
    input: [{ role: "user", content: "Hi" }, ...r1.output as Obj[], { role: "user", content: "More" }],
  }, gw.token);
  for (const [i, signature] of [[1, "dGV4dC0x"], [3, "dGV4dC0y"]]) {
    const model = (upstream.requests[i as number].body!.contents as Obj[])[1];
    assert.deepEqual(
      model,
      { role: "model", parts: [{ text: "Hello.", thoughtSignature: signature }] },
      `request ${i}`,
    );
  }
  // The same history sent to Claude loses the block that carries Gemini's signature: Anthropic could not verify it.
  await post(gw, "/v1/messages", { model: "claude-test", max_tokens: 100, messages: history }, gw.tokens.default);
  const toClaude = upstream.requests.at(-1)!.body!.messages as Obj[];
  assert.deepEqual(toClaude[1], { role: "assistant", content: [{ type: "text", text: "Hello." }] });
});

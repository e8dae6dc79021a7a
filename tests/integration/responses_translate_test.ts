/**
 * Clients of the other protocols onto an `openai-responses` upstream, translated, over real HTTP: the Anthropic SDK's
 * tool loop with thinking (the provider gets its own reasoning items back and verifies them), a chat client and a
 * Gemini client; a failover to another account's deployment; such reasoning kept from an Anthropic upstream.
 */
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI, type Part } from "@google/genai";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { deadlineFetch, readText, within } from "../_helpers.ts";
import { REQUEST_DEADLINE_MS } from "../_reads.ts";
import { type ResponsesRig, responsesRig } from "../_responses_upstream.ts";

type Obj = Record<string, unknown>;

const READ_FILE = {
  name: "read_file",
  description: "Reads a file.",
  input_schema: { type: "object" as const, properties: { path: { type: "string" } }, required: ["path"] },
};

function anthropic(rig: ResponsesRig): Anthropic {
  return new Anthropic({ apiKey: rig.token, baseURL: rig.gw.url, maxRetries: 0, fetch: deadlineFetch() });
}

/** What the deployment at `name` was sent, in order. */
function sentTo(rig: ResponsesRig, name: string): Obj[] {
  return rig.upstream.requests.filter((r) => r.path === `/${name}/v1/responses`).map((r) => r.body!);
}

/** Adds the answer and the result of its tool call to the conversation; the call, for assertions. */
function answerCall(messages: Anthropic.MessageParam[], answer: Anthropic.Message): Anthropic.ToolUseBlock {
  const call = answer.content.find((b) => b.type === "tool_use")!;
  messages.push({ role: "assistant", content: answer.content });
  messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "hi" }] });
  return call;
}

/** One turn of the Anthropic SDK, streamed or not. */
async function turn(client: Anthropic, stream: boolean, params: Anthropic.MessageCreateParamsNonStreaming) {
  return stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
}

for (const stream of [false, true]) {
  Deno.test(`the Anthropic SDK's tool loop with thinking on gpt-codex: the provider verifies its own reasoning (stream: ${stream})`, async () => {
    await using rig = await responsesRig();
    const client = anthropic(rig);
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Read notes.txt" }];
    const params = {
      model: "gpt-codex",
      max_tokens: 20000,
      system: "You are a coding agent.",
      thinking: { type: "enabled" as const, budget_tokens: 16384 },
      tools: [READ_FILE],
      messages,
    };
    const first = await turn(client, stream, params);
    assert.deepEqual(first.content.map((b) => b.type), ["thinking", "tool_use"]);
    assert.equal(first.stop_reason, "tool_use");
    const thinking = first.content[0] as Anthropic.ThinkingBlock;
    assert.equal(thinking.thinking, "Thinking about step 0.");
    const call = answerCall(messages, first);
    assert.deepEqual([call.name, call.input], ["read_file", { path: "notes.txt" }]);
    const second = await turn(client, stream, params);
    assert.deepEqual(second.content.map((b) => b.type), ["thinking", "text"]);
    assert.equal((second.content[1] as Anthropic.TextBlock).text, "The notes say hi.");
    assert.equal(second.stop_reason, "end_turn");
    assert.deepEqual(rig.api["rsp-a"].verified, [0, 1], "the provider verified its own reasoning on the second turn");
    const [sent1, sent2] = sentTo(rig, "rsp-a");
    assert.deepEqual(
      { ...sent1, input: undefined },
      {
        model: "gpt-codex",
        input: undefined,
        store: false,
        instructions: "You are a coding agent.",
        tools: [{
          type: "function",
          name: "read_file",
          description: "Reads a file.",
          parameters: READ_FILE.input_schema,
          strict: false,
        }],
        max_output_tokens: 20000,
        reasoning: { effort: "high", summary: "auto" },
        include: ["reasoning.encrypted_content"],
        ...stream ? { stream: true } : {},
      },
    );
    assert.deepEqual((sent2.input as Obj[]).map((i) => i.type), [
      "message",
      "reasoning",
      "function_call",
      "function_call_output",
    ]);
    assert.equal(sent2.input && (sent2.input as Obj[])[2].call_id, call.id);
  });
}

Deno.test("thinking shown as omitted: the reasoning rides in a redacted_thinking block and is verified all the same", async () => {
  await using rig = await responsesRig();
  const client = anthropic(rig);
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Read notes.txt" }];
  const params = {
    model: "gpt-codex",
    max_tokens: 4000,
    thinking: { type: "adaptive", display: "omitted" },
    tools: [READ_FILE],
    messages,
  } as unknown as Anthropic.MessageCreateParamsNonStreaming;
  const first = await turn(client, true, params);
  assert.deepEqual(first.content.map((b) => b.type), ["redacted_thinking", "tool_use"]);
  answerCall(messages, first);
  await turn(client, false, params);
  assert.deepEqual(rig.api["rsp-a"].verified, [0, 1]);
  assert.deepEqual(sentTo(rig, "rsp-a")[0].reasoning, { effort: "medium" });
});

Deno.test("a translated answer's usage is recorded with its cached input and reasoning tokens", async () => {
  await using rig = await responsesRig();
  const res = await rig.post("/v1/messages", {
    model: "gpt-codex",
    max_tokens: 4000,
    thinking: { type: "enabled", budget_tokens: 2048 },
    messages: [{ role: "user", content: "Hi" }],
  });
  const body = JSON.parse(await readText(res));
  const provider = JSON.parse(rig.sent.get("POST /rsp-a/v1/responses")![0]).usage;
  const cached = provider.input_tokens_details.cached_tokens;
  assert.deepEqual(body.usage, {
    input_tokens: provider.input_tokens - cached,
    output_tokens: provider.output_tokens,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
  });
  await rig.gw.flush();
  assert.equal(
    rig.gw.exchanges.at(-1)!.usage?.reasoning_output_tokens,
    provider.output_tokens_details.reasoning_tokens,
  );
});

Deno.test("after a failover to another account's deployment, the turn is resent there without the reasoning it cannot read", async () => {
  await using rig = await responsesRig();
  const client = anthropic(rig);
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Read notes.txt" }];
  const params = {
    model: "gpt-cross",
    max_tokens: 4000,
    thinking: { type: "enabled" as const, budget_tokens: 2048 },
    tools: [READ_FILE],
    messages,
  };
  const first = await turn(client, true, params);
  answerCall(messages, first);
  rig.setDown("rsp-a2", true);
  const second = await turn(client, true, params);
  assert.equal((second.content.at(-1) as Anthropic.TextBlock).text, "The notes say hi.");
  const [refused, resent] = sentTo(rig, "rsp-x");
  assert.ok((refused.input as Obj[]).some((i) => i.type === "reasoning"));
  assert.deepEqual(resent.input, (refused.input as Obj[]).filter((i) => i.type !== "reasoning"));
  assert.deepEqual(rig.api["rsp-x"].verified, [0], "the second account read only what it could");
});

Deno.test("the provider's reasoning in a history sent to an Anthropic model is left out; Claude's own thinking is not sent to gpt-codex", async () => {
  await using rig = await responsesRig();
  const client = anthropic(rig);
  const ask: Anthropic.MessageParam = { role: "user", content: "Hi" };
  const first = await client.messages.create({
    model: "gpt-codex",
    max_tokens: 4000,
    thinking: { type: "enabled", budget_tokens: 2048 },
    messages: [ask],
  });
  assert.deepEqual(first.content.map((b) => b.type), ["thinking", "text"]);
  const history: Anthropic.MessageParam[] = [ask, { role: "assistant", content: first.content }, {
    role: "user",
    content: "More",
  }];
  await client.messages.create({ model: "claude-test", max_tokens: 100, messages: history });
  const toClaude = rig.upstream.requests.at(-1)!.body!.messages as Obj[];
  assert.deepEqual(toClaude[1], { role: "assistant", content: [{ type: "text", text: "ok" }] });
  const claude: Anthropic.MessageParam = {
    role: "assistant",
    content: [{ type: "thinking", thinking: "Mine.", signature: "c2lnLWFudGhyb3BpYw==" }, { type: "text", text: "ok" }],
  };
  await client.messages.create({ model: "gpt-codex", max_tokens: 100, messages: [ask, claude, history[2]] });
  assert.deepEqual(sentTo(rig, "rsp-a").at(-1)!.input, [
    { type: "message", role: "user", content: [{ type: "input_text", text: "Hi" }] },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] },
    { type: "message", role: "user", content: [{ type: "input_text", text: "More" }] },
  ]);
});

Deno.test("a chat client on gpt-codex: an answer, a tool call and its result; reasoning_effort on every turn", async () => {
  await using rig = await responsesRig();
  const client = new OpenAI({ apiKey: rig.token, baseURL: `${rig.gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
  const plain = await client.chat.completions.create({
    model: "gpt-codex",
    messages: [{ role: "user", content: "Hi" }],
  });
  assert.equal(plain.choices[0].message.content, "ok");
  const tools: OpenAI.ChatCompletionTool[] = [{
    type: "function",
    function: { name: "read_file", parameters: READ_FILE.input_schema },
  }];
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Read notes.txt" }];
  const first = await client.chat.completions.create({ model: "gpt-codex", messages, tools, reasoning_effort: "high" });
  const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
  assert.equal(first.choices[0].finish_reason, "tool_calls");
  assert.deepEqual([call.function.name, JSON.parse(call.function.arguments)], ["read_file", { path: "notes.txt" }]);
  messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "hi" });
  const stream = await client.chat.completions.create({
    model: "gpt-codex",
    messages,
    tools,
    reasoning_effort: "high",
    stream: true,
  });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  assert.equal(text, "The notes say hi.");
  const sent = sentTo(rig, "rsp-a");
  assert.equal(sent[0].max_output_tokens, undefined, "no limit asked, none sent");
  assert.deepEqual(sent.slice(1).map((b) => b.reasoning), [
    { effort: "high", summary: "auto" },
    { effort: "high", summary: "auto" },
  ]);
  assert.deepEqual((sent[2].input as Obj[]).slice(1), [
    { type: "function_call", call_id: call.id, name: "read_file", arguments: '{"path":"notes.txt"}' },
    { type: "function_call_output", call_id: call.id, output: "hi" },
  ]);
});

Deno.test("a Gemini client on gpt-codex: an answer, a tool loop whose reasoning comes back in its thoughtSignature", async () => {
  await using rig = await responsesRig();
  const ai = new GoogleGenAI({ apiKey: rig.token, httpOptions: { baseUrl: rig.gw.url, timeout: REQUEST_DEADLINE_MS } });
  const plain = await within(
    ai.models.generateContent({ model: "gpt-codex", contents: "Hi" }),
    REQUEST_DEADLINE_MS,
    "hi",
  );
  assert.equal(plain.text, "ok");
  const config = {
    tools: [{ functionDeclarations: [{ name: "read_file", parametersJsonSchema: READ_FILE.input_schema }] }],
    thinkingConfig: { thinkingBudget: 8192, includeThoughts: true },
  };
  const contents = [{ role: "user", parts: [{ text: "Read notes.txt" }] as Part[] }];
  const first = await within(
    ai.models.generateContent({ model: "gpt-codex", contents, config }),
    REQUEST_DEADLINE_MS,
    "1",
  );
  const call = first.functionCalls![0];
  assert.deepEqual([call.name, call.args], ["read_file", { path: "notes.txt" }]);
  contents.push(first.candidates![0].content as { role: string; parts: Part[] });
  contents.push({
    role: "user",
    parts: [{ functionResponse: { id: call.id, name: "read_file", response: { output: "hi" } } }],
  });
  const chunks = await within(
    ai.models.generateContentStream({ model: "gpt-codex", contents, config }),
    REQUEST_DEADLINE_MS,
    "2",
  );
  let text = "";
  for await (const chunk of chunks) {
    text += chunk.candidates?.[0]?.content?.parts?.filter((p) => !p.thought).map((p) => p.text ?? "").join("") ?? "";
  }
  assert.equal(text, "The notes say hi.");
  assert.deepEqual(
    rig.api["rsp-a"].verified,
    [0, 0, 1],
    "the provider verified its own reasoning on the loop's second turn",
  );
  assert.equal(sentTo(rig, "rsp-a")[0].max_output_tokens, undefined, "no limit asked, none sent");
  assert.deepEqual(sentTo(rig, "rsp-a").slice(1).map((b) => b.reasoning), [
    { effort: "medium", summary: "auto" },
    { effort: "medium", summary: "auto" },
  ]);
});

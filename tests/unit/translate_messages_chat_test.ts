/** @module Messages client -> chat upstream: the request mapping, tool-name restoration and the stream's state rules. */
import assert from "node:assert/strict";
import { SseParser } from "../../src/core/sse.ts";
import { messagesViaChat } from "../../src/translate/messages_chat_response.ts";
import type { TranslateContext } from "../../src/translate/mod.ts";
import { readAnthropicStream } from "../_client_readers.ts";
import { testContext } from "../_translate_helpers.ts";

const SCHEMA = { type: "object", properties: {} };
const LONG_NAME = `mcp__filesystem_server__${"read_multiple_files_with_metadata_".repeat(2)}`;

function request(
  body: Record<string, unknown>,
  logs: Record<string, unknown>[] = [],
  upstream: Partial<TranslateContext> = { reasoningEffort: true },
) {
  const translation = messagesViaChat({ ...testContext(logs), ...upstream });
  return { out: translation.request({ model: "public-model", max_tokens: 100, ...body }), translation };
}

Deno.test("messagesViaChat() puts the system prompt, blocks and in-message system items in system messages", () => {
  const { out } = request({
    system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }, {
      type: "text",
      text: "Be kind.",
    }],
    messages: [{ role: "system", content: "Context." }, { role: "user", content: "Hi" }],
  });
  assert.deepEqual(out.messages, [
    { role: "system", content: "Be brief.\nBe kind." },
    { role: "system", content: "Context." },
    { role: "user", content: "Hi" },
  ]);
  assert.equal(out.model, "upstream-model");
  assert.equal(out.max_tokens, 100);
});

Deno.test("messagesViaChat() turns tool_use and tool_result into tool_calls and tool messages, in adjacency order", () => {
  const { out } = request({
    messages: [
      { role: "user", content: "Time?" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Need the tool.", signature: "sig" },
          { type: "text", text: "Checking." },
          { type: "tool_use", id: "toolu_1", name: "get_time", input: { tz: "UTC" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "Also this picture:" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
          { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "12:00" }] },
          { type: "tool_result", tool_use_id: "toolu_2", content: "boom", is_error: true },
        ],
      },
    ],
  });
  assert.deepEqual(out.messages, [
    { role: "user", content: "Time?" },
    {
      role: "assistant",
      content: "Checking.",
      reasoning_content: "Need the tool.",
      tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_time", arguments: '{"tz":"UTC"}' } }],
    },
    { role: "tool", tool_call_id: "toolu_1", content: "12:00" },
    { role: "tool", tool_call_id: "toolu_2", content: "Error: boom" },
    {
      role: "user",
      content: [
        { type: "text", text: "Also this picture:" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ],
    },
  ]);
});

Deno.test("messagesViaChat() logs an image it cannot put in a tool message", () => {
  const logs: Record<string, unknown>[] = [];
  const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };
  const { out } = request({
    messages: [{
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "shot" }, image] }],
    }],
  }, logs);
  assert.deepEqual(out.messages, [{ role: "tool", tool_call_id: "t1", content: "shot" }]);
  assert.ok(logs.some((l) => l.field === "content.tool_result.content"));
});

Deno.test("messagesViaChat() maps tools, tool_choice, stop sequences, thinking, user and streaming", () => {
  const logs: Record<string, unknown>[] = [];
  const { out } = request({
    messages: [{ role: "user", content: "Hi" }],
    tools: [
      { name: "get_time", description: "Time", input_schema: SCHEMA, cache_control: { type: "ephemeral" } },
      { type: "web_search_20250305", name: "web_search", max_uses: 3 },
    ],
    tool_choice: { type: "any", disable_parallel_tool_use: true },
    stop_sequences: ["END"],
    thinking: { type: "enabled", budget_tokens: 5000 },
    metadata: { user_id: "u-1" },
    temperature: 0.3,
    top_k: 5,
    context_management: { edits: [] },
    stream: true,
  }, logs);
  assert.deepEqual(out.tools, [{
    type: "function",
    function: { name: "get_time", parameters: SCHEMA, description: "Time" },
  }]);
  assert.equal(out.tool_choice, "required");
  assert.equal(out.parallel_tool_calls, false);
  assert.deepEqual(out.stop, ["END"]);
  assert.equal(out.reasoning_effort, "medium");
  assert.equal(out.user, "u-1");
  assert.equal(out.temperature, 0.3);
  assert.equal(out.top_k, undefined);
  assert.equal(out.context_management, undefined);
  assert.deepEqual(out.stream_options, { include_usage: true });
  assert.ok(
    logs.some((l) => l.event === "translate_drop" && l.tool === "web_search"),
    "the server tool drop is logged",
  );
});

/** Claude Code's `metadata.user_id`: a JSON string of its device, account and session ids. */
const CLAUDE_CODE_USER = JSON.stringify({
  device_id: "9f".repeat(32),
  account_uuid: "0d4f0c2e-5b1a-4c3e-9a7d-2f6b8e1c4a90",
  session_id: "7c1e2b3a-4d5f-4e6a-8b9c-0a1b2c3d4e5f",
});

Deno.test("messagesViaChat() sends a user id too long for OpenAI as a short stable digest", () => {
  const send = (userId: string) =>
    request({ messages: [{ role: "user", content: "Hi" }], metadata: { user_id: userId } }, []).out.user;
  assert.ok(CLAUDE_CODE_USER.length > 128);
  const digest = send(CLAUDE_CODE_USER);
  assert.match(String(digest), /^user_[0-9a-f]{40}$/);
  assert.equal(send(CLAUDE_CODE_USER), digest, "the same user gets the same digest on every request");
  assert.notEqual(send(CLAUDE_CODE_USER.replace("7c1e", "8c1e")), digest, "another user gets another");
  assert.equal(send("x".repeat(64)), "x".repeat(64), "an id that fits passes unchanged");
  assert.match(String(send("x".repeat(65))), /^user_[0-9a-f]{40}$/);
  assert.equal(send(""), undefined);
});

Deno.test("messagesViaChat() sends thinking as reasoning_effort only to an upstream that takes it", () => {
  const logs: Record<string, unknown>[] = [];
  const body = { messages: [{ role: "user", content: "Hi" }], thinking: { type: "adaptive" } };
  assert.equal(request(body, [], { reasoningEffort: true }).out.reasoning_effort, "medium");
  assert.equal(request(body, logs, { reasoningEffort: false }).out.reasoning_effort, undefined);
  assert.ok(logs.some((l) => l.event === "translate_drop" && l.field === "thinking"));
});

Deno.test("messagesViaChat() puts the output limit in the field the upstream takes", () => {
  const body = { messages: [{ role: "user", content: "Hi" }], max_tokens: 300 };
  const plain = request(body, [], {}).out;
  assert.equal(plain.max_tokens, 300);
  const reasoning = request(body, [], { maxTokensField: "max_completion_tokens" }).out;
  assert.equal(reasoning.max_completion_tokens, 300);
  assert.equal(reasoning.max_tokens, undefined);
});

Deno.test("messagesViaChat() shortens a long tool name for the upstream and restores it in the answer", () => {
  const { out, translation } = request({
    messages: [{ role: "user", content: "Hi" }],
    tools: [{ name: LONG_NAME, input_schema: SCHEMA }],
    tool_choice: { type: "tool", name: LONG_NAME },
  });
  const short = (out.tools as Record<string, Record<string, string>>[])[0].function.name;
  assert.ok(short.length <= 64 && short !== LONG_NAME);
  assert.deepEqual(out.tool_choice, { type: "function", function: { name: short } });
  const call = { id: "call_1", type: "function", function: { name: short, arguments: "{}" } };
  const body = translation.response({
    choices: [{ message: { content: null, tool_calls: [call] }, finish_reason: "stop" }],
  });
  const block = (body.content as Record<string, unknown>[])[0];
  assert.equal(block.name, LONG_NAME);
  assert.equal(body.stop_reason, "tool_use", "tool calls mean tool_use even when the upstream says stop");
  const chunks = [
    {
      choices: [{
        index: 0,
        delta: { role: "assistant", tool_calls: [{ index: 0, id: "c.1", function: { name: short } }] },
      }],
    },
    {
      choices: [{
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: "{}" } }] },
        finish_reason: "tool_calls",
      }],
    },
  ].map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
  const step = translation.stream!();
  const events = new SseParser().push(chunks).flatMap((m) => step.next(m));
  events.push(...step.end());
  const got = readAnthropicStream(events);
  assert.equal(got.tools[0].name, LONG_NAME);
  assert.equal(got.tools[0].id, "c_1", "the id is sanitised");
});

Deno.test("messagesViaChat() stream says tool_use when tool calls end with finish_reason stop or none", () => {
  for (const finish of ["stop", undefined]) {
    const step = messagesViaChat(testContext()).stream!();
    const call = { index: 0, id: "call_1", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } };
    const events = [
      { choices: [{ index: 0, delta: { role: "assistant", tool_calls: [call] } }] },
      { choices: [{ index: 0, delta: {}, ...(finish ? { finish_reason: finish } : {}) }] },
    ].flatMap((c) => step.next({ data: JSON.stringify(c) }));
    events.push(...step.next({ data: "[DONE]" }), ...step.end());
    const delta = JSON.parse(events.find((e) => e.event === "message_delta")!.data);
    assert.equal(delta.delta.stop_reason, "tool_use", `finish_reason ${finish}`);
  }
});

Deno.test("messagesViaChat() stream waits for the usage chunk that follows the finish chunk", () => {
  const step = messagesViaChat(testContext()).stream!();
  const events = [
    { choices: [{ index: 0, delta: { role: "assistant", content: "Hi" } }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    { choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } } },
  ].flatMap((c) => step.next({ data: JSON.stringify(c) }));
  assert.ok(!events.some((e) => e.event === "message_delta"), "no message_delta before the usage chunk");
  events.push(...step.next({ data: "[DONE]" }), ...step.end());
  const delta = JSON.parse(events.find((e) => e.event === "message_delta")!.data);
  assert.deepEqual(delta.usage, {
    input_tokens: 5,
    output_tokens: 2,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 4,
  });
});

Deno.test("messagesViaChat() estimates usage when the chat upstream reports none", () => {
  const translation = messagesViaChat(testContext());
  const prompt = "x".repeat(400);
  translation.request({ model: "m", max_tokens: 10, stream: true, messages: [{ role: "user", content: prompt }] });
  const step = translation.stream!();
  const events = [
    { choices: [{ index: 0, delta: { role: "assistant", content: "y".repeat(40) } }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  ].flatMap((c) => step.next({ data: JSON.stringify(c) })).concat(step.end());
  const start = JSON.parse(events[0].data).message.usage;
  const delta = JSON.parse(events.find((e) => e.event === "message_delta")!.data).usage;
  assert.ok(start.input_tokens >= 100 && start.input_tokens < 130, `estimate ${start.input_tokens}`);
  assert.equal(delta.input_tokens, start.input_tokens);
  assert.equal(delta.output_tokens, 10);
  const whole = translation.response({ choices: [{ message: { content: "y".repeat(40) }, finish_reason: "stop" }] });
  assert.equal((whole.usage as Record<string, number>).input_tokens, start.input_tokens);
});

Deno.test("messagesViaChat() reports a tool call cut by the output limit as max_tokens, not tool_use", () => {
  const { translation } = request({ messages: [{ role: "user", content: "Write" }], stream: true });
  const call = { index: 0, id: "c1", type: "function", function: { name: "write", arguments: '{"path":"a","co' } };
  const whole = translation.response({
    choices: [{ message: { content: null, tool_calls: [call] }, finish_reason: "length" }],
  });
  assert.equal(whole.stop_reason, "max_tokens");
  const chunks = [
    { choices: [{ index: 0, delta: { role: "assistant", tool_calls: [call] } }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "length" }] },
  ].map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
  const step = translation.stream!();
  const events = new SseParser().push(chunks).flatMap((m) => step.next(m));
  events.push(...step.end());
  const delta = events.find((e) => e.event === "message_delta")!;
  assert.equal(JSON.parse(delta.data).delta.stop_reason, "max_tokens");
});

/** @module Chat client -> Anthropic upstream: the request mapping and the usage chunk rule. */
import assert from "node:assert/strict";
import { GatewayError } from "../../src/core/errors.ts";
import { chatViaMessages } from "../../src/translate/chat_messages_response.ts";
import { freeformDescription, freeformParameters } from "../../src/translate/freeform_tools.ts";
import { testContext } from "../_translate_helpers.ts";

function request(body: Record<string, unknown>, logs: Record<string, unknown>[] = []) {
  const translation = chatViaMessages(testContext(logs));
  return { out: translation.request({ model: "public-model", ...body }), translation };
}

Deno.test("chatViaMessages() moves system and developer messages to system and defaults max_tokens", () => {
  const { out } = request({
    messages: [
      { role: "system", content: "Be brief." },
      { role: "developer", content: [{ type: "text", text: "Use tools." }] },
      { role: "user", content: "Hi" },
    ],
  });
  assert.deepEqual(out.system, [{ type: "text", text: "Be brief." }, { type: "text", text: "Use tools." }]);
  assert.deepEqual(out.messages, [{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
  assert.equal(out.max_tokens, 4096, "TranslateContext.defaultMaxTokens");
  assert.equal(out.model, "upstream-model");
});

Deno.test("chatViaMessages() merges tool messages into one user turn right after the tool calls", () => {
  const { out } = request({
    max_completion_tokens: 50,
    messages: [
      { role: "assistant", content: "Earlier." },
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "a", arguments: '{"x":1}' } },
          { id: "call.2", type: "function", function: { name: "b", arguments: "" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "one" },
      { role: "tool", tool_call_id: "call.2", content: [{ type: "text", text: "two" }] },
      { role: "user", content: "Thanks" },
    ],
  });
  assert.equal(out.max_tokens, 50);
  assert.deepEqual(out.messages, [
    { role: "user", content: [{ type: "text", text: "..." }] },
    { role: "assistant", content: [{ type: "text", text: "Earlier." }] },
    { role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }] },
    {
      role: "assistant",
      content: [
        { type: "tool_use", id: "call_1", name: "a", input: { x: 1 } },
        { type: "tool_use", id: "call_2", name: "b", input: {} },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_1", content: "one" },
        { type: "tool_result", tool_use_id: "call_2", content: "two" },
        { type: "text", text: "Thanks" },
      ],
    },
  ]);
});

Deno.test("chatViaMessages() maps tools, tool_choice, parallel_tool_calls, stop, user and temperature", () => {
  const logs: Record<string, unknown>[] = [];
  const { out } = request({
    messages: [{ role: "user", content: "Hi" }],
    tools: [
      { type: "function", function: { name: "f", description: "F", parameters: { type: "object" } } },
      { type: "custom", custom: { name: "apply_patch" } },
      { type: "web_search_preview" },
    ],
    tool_choice: { type: "function", function: { name: "f" } },
    parallel_tool_calls: false,
    stop: "END",
    user: "u-1",
    temperature: 1.5,
    logprobs: true,
  }, logs);
  assert.deepEqual(out.tools, [
    { name: "f", description: "F", input_schema: { type: "object" } },
    { name: "apply_patch", description: freeformDescription(undefined, undefined), input_schema: freeformParameters() },
  ]);
  assert.deepEqual(out.tool_choice, { type: "tool", name: "f", disable_parallel_tool_use: true });
  assert.deepEqual(out.stop_sequences, ["END"]);
  assert.deepEqual(out.metadata, { user_id: "u-1" });
  assert.equal(out.temperature, 1, "clamped to Anthropic's range");
  assert.equal(out.logprobs, undefined);
  assert.ok(logs.some((l) => l.event === "translate_drop" && l.tool === "web_search_preview"));
});

Deno.test("chatViaMessages() turns reasoning_effort into a thinking budget and drops temperature with it", () => {
  const { out } = request({
    messages: [{ role: "user", content: "Hi" }],
    max_tokens: 20000,
    reasoning_effort: "high",
    temperature: 0.2,
  });
  assert.deepEqual(out.thinking, { type: "enabled", budget_tokens: 16384 });
  assert.equal(out.temperature, undefined);
});

Deno.test("chatViaMessages() refuses n above 1 naming the field", () => {
  assert.throws(
    () => request({ messages: [{ role: "user", content: "Hi" }], n: 2 }),
    (err) => err instanceof GatewayError && err.status === 400 && err.param === "n",
  );
});

Deno.test("chatViaMessages() sends the usage chunk only when the client asked for it", () => {
  const events = [
    { type: "message_start", message: { id: "msg_1", usage: { input_tokens: 3, output_tokens: 1 } } },
    { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } },
    { type: "message_stop" },
  ].map((e) => ({ event: e.type, data: JSON.stringify(e) }));
  for (const includeUsage of [false, true]) {
    const translation = chatViaMessages(testContext());
    translation.request({
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    });
    const step = translation.stream!();
    const out = events.flatMap((e) => step.next(e)).concat(step.end());
    const usage = out.filter((m) => m.data !== "[DONE]").map((m) => JSON.parse(m.data)).filter((c) => c.usage);
    assert.equal(usage.length, includeUsage ? 1 : 0);
    if (includeUsage) assert.equal(usage[0].usage.total_tokens, 5);
    assert.equal(out.at(-1)!.data, "[DONE]");
  }
});

Deno.test("chatViaMessages() gives a tool call without input the arguments {}", () => {
  const step = chatViaMessages(testContext()).stream!();
  const out = [
    { type: "message_start", message: { id: "msg_1", usage: { input_tokens: 3, output_tokens: 1 } } },
    {
      type: "content_block_start",
      index: 0,
      content_block: { type: "tool_use", id: "toolu_1", name: "now", input: {} },
    },
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 2 } },
    { type: "message_stop" },
  ].flatMap((e) => step.next({ event: e.type, data: JSON.stringify(e) }));
  const args = out.filter((m) => m.data !== "[DONE]").map((m) => JSON.parse(m.data).choices[0]?.delta.tool_calls)
    .filter(Boolean).flat().map((c) => c.function.arguments).join("");
  assert.equal(args, "{}");
});

Deno.test("chatViaMessages() sends no whitespace-only text blocks and no empty tool_result content", () => {
  const { out } = request({
    messages: [
      { role: "user", content: "Go" },
      { role: "assistant", content: "  ", tool_calls: [{ id: "c1", type: "function", function: { name: "f" } }] },
      { role: "tool", tool_call_id: "c1", content: "" },
    ],
  });
  assert.deepEqual((out.messages as unknown[]).slice(1), [
    { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "f", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "c1" }] },
  ]);
});

Deno.test("chatViaMessages() leaves thinking off when the history has tool calls it cannot carry thinking for", () => {
  const logs: Record<string, unknown>[] = [];
  const loop = [
    { role: "user", content: "Time?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: "c1", content: "12:00" },
  ];
  const inLoop = request({ messages: loop, reasoning_effort: "high", max_tokens: 30000 }, logs);
  assert.equal(inLoop.out.thinking, undefined);
  assert.ok(logs.some((l) => l.field === "reasoning" && l.reason === "tool calls in history"));
  const plain = request({ messages: [{ role: "user", content: "Hi" }], reasoning_effort: "high", max_tokens: 30000 });
  assert.equal((plain.out.thinking as Record<string, unknown>).type, "enabled");
});

/** @module Responses client -> chat or Anthropic upstream: input items, tools, refusals and the thinking round trip. */
import assert from "node:assert/strict";
import { GatewayError } from "../../src/core/errors.ts";
import { freeformParameters } from "../../src/translate/freeform_tools.ts";
import { responsesViaChat } from "../../src/translate/responses_chat_response.ts";
import { responsesViaMessages } from "../../src/translate/responses_messages_response.ts";
import { fixture } from "../_helpers.ts";
import { testContext } from "../_translate_helpers.ts";

const CODEX_LIKE = {
  model: "public-model",
  instructions: "You are a coding agent.",
  store: false,
  stream: true,
  include: ["reasoning.encrypted_content"],
  prompt_cache_key: "abc",
  tool_choice: "auto",
  parallel_tool_calls: false,
  max_output_tokens: 2000,
  input: [
    { type: "message", role: "developer", content: [{ type: "input_text", text: "Sandbox: none." }] },
    { type: "message", role: "user", content: [{ type: "input_text", text: "List files" }] },
    { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Plan." }], encrypted_content: "opaque" },
    { type: "function_call", call_id: "call_1", name: "shell", arguments: '{"cmd":["ls"]}' },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "Running." }] },
    { type: "function_call_output", call_id: "call_1", output: "a.txt" },
    { type: "custom_tool_call", call_id: "call_2", name: "apply_patch", input: "*** Begin Patch" },
    { type: "custom_tool_call_output", call_id: "call_2", output: "Done!" },
  ],
  tools: [
    { type: "function", name: "shell", description: "Run", parameters: { type: "object" }, strict: false },
    { type: "web_search" },
    { type: "custom", name: "apply_patch", format: { type: "grammar" } },
  ],
};

Deno.test("responsesViaChat() turns Codex-style input into chat messages with tool messages adjacent", () => {
  const logs: Record<string, unknown>[] = [];
  const out = responsesViaChat(testContext(logs)).request(structuredClone(CODEX_LIKE));
  assert.deepEqual(out.messages, [
    { role: "system", content: "You are a coding agent." },
    { role: "system", content: "Sandbox: none." },
    { role: "user", content: "List files" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "shell", arguments: '{"cmd":["ls"]}' } }],
    },
    { role: "tool", tool_call_id: "call_1", content: "a.txt" },
    { role: "assistant", content: "Running." },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_2",
        type: "function",
        function: { name: "apply_patch", arguments: '{"input":"*** Begin Patch"}' },
      }],
    },
    { role: "tool", tool_call_id: "call_2", content: "Done!" },
  ]);
  const tools = out.tools as { function: Record<string, unknown> }[];
  assert.deepEqual(tools[0], {
    type: "function",
    function: { name: "shell", parameters: { type: "object" }, description: "Run", strict: false },
  });
  assert.equal(tools[1].function.name, "apply_patch");
  assert.deepEqual(tools[1].function.parameters, freeformParameters());
  assert.equal(tools.length, 2);
  assert.equal(out.tool_choice, "auto");
  assert.equal(out.parallel_tool_calls, false);
  assert.equal(out.max_tokens, 2000);
  assert.deepEqual(out.stream_options, { include_usage: true });
  for (const field of ["store", "include", "prompt_cache_key", "instructions", "input"]) {
    assert.equal(out[field], undefined);
  }
  assert.deepEqual(logs.map((l) => [l.event, l.field, l.type]), [["translate_drop", "tools", "web_search"]]);
});

Deno.test("responsesViaMessages() builds alternating Anthropic turns with tool results first", () => {
  const logs: Record<string, unknown>[] = [];
  const out = responsesViaMessages(testContext(logs)).request(structuredClone(CODEX_LIKE));
  assert.deepEqual(out.system, [{ type: "text", text: "You are a coding agent." }, {
    type: "text",
    text: "Sandbox: none.",
  }]);
  assert.deepEqual(out.messages, [
    { role: "user", content: [{ type: "text", text: "List files" }] },
    {
      role: "assistant",
      content: [
        { type: "tool_use", id: "call_1", name: "shell", input: { cmd: ["ls"] } },
        { type: "text", text: "Running." },
      ],
    },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "a.txt" }] },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "call_2", name: "apply_patch", input: { input: "*** Begin Patch" } }],
    },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "call_2", content: "Done!" }] },
  ]);
  assert.equal(out.max_tokens, 2000);
  assert.deepEqual(out.tool_choice, { type: "auto", disable_parallel_tool_use: true });
  const tools = out.tools as Record<string, unknown>[];
  assert.deepEqual(tools[0], { name: "shell", description: "Run", input_schema: { type: "object" } });
  assert.deepEqual([tools[1].name, tools[1].input_schema], ["apply_patch", freeformParameters()]);
  assert.equal(tools.length, 2);
});

Deno.test("responsesViaMessages() defaults max_tokens and maps reasoning effort to thinking", () => {
  const out = responsesViaMessages(testContext()).request({
    model: "m",
    input: "Hi",
    reasoning: { effort: "low", summary: "auto" },
  });
  assert.equal(out.max_tokens, 4096);
  assert.deepEqual(out.thinking, { type: "enabled", budget_tokens: 2048 });
  assert.deepEqual(out.messages, [{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
});

Deno.test("previous_response_id is refused with a 400 naming the field, for both upstreams", () => {
  for (const translator of [responsesViaChat, responsesViaMessages]) {
    assert.throws(
      () => translator(testContext()).request({ model: "m", input: "Hi", previous_response_id: "resp_1" }),
      (err) => err instanceof GatewayError && err.status === 400 && err.param === "previous_response_id",
    );
  }
});

Deno.test("Anthropic thinking survives a Responses round trip byte for byte via encrypted_content", () => {
  const upstream = JSON.parse(fixture("anthropic/reasoning.json"));
  const answer = responsesViaMessages(testContext()).response(upstream);
  const reasoning = (answer.output as Record<string, unknown>[]).find((item) => item.type === "reasoning")!;
  assert.deepEqual(reasoning.summary, [{ type: "summary_text", text: "Thinking about it." }]);
  const next = responsesViaMessages(testContext()).request({
    model: "m",
    input: [{ type: "message", role: "user", content: "Q" }, ...(answer.output as unknown[]), {
      type: "message",
      role: "user",
      content: "Again",
    }],
  });
  const assistant = (next.messages as Record<string, unknown>[])[1];
  assert.deepEqual((assistant.content as unknown[])[0], upstream.content[0]);
});

Deno.test("reasoning items the gateway did not seal are not sent to an Anthropic upstream", () => {
  const out = responsesViaMessages(testContext()).request({
    model: "m",
    input: [
      { type: "message", role: "user", content: "Q" },
      { type: "reasoning", summary: [], encrypted_content: "gAAAA-from-someone-else" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "A" }] },
    ],
  });
  assert.deepEqual((out.messages as Record<string, unknown>[])[1], {
    role: "assistant",
    content: [{ type: "text", text: "A" }],
  });
});

Deno.test("responsesViaMessages() stream gives a function call without input the arguments {}", () => {
  const step = responsesViaMessages(testContext()).stream!();
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
  ].flatMap((e) => step.next({ event: e.type, data: JSON.stringify(e) })).map((m) => JSON.parse(m.data));
  const done = out.find((e) => e.type === "response.output_item.done");
  assert.equal(done.item.arguments, "{}");
  assert.equal(out.at(-1).response.output[0].arguments, "{}");
});

Deno.test("a tool_choice naming a freeform or namespaced tool names its upstream form", () => {
  const tools = [
    { type: "custom", name: "apply_patch" },
    { type: "namespace", name: "ns", description: "N", tools: [{ type: "function", name: "f" }] },
  ];
  const anthropic = responsesViaMessages(testContext()).request({
    model: "m",
    input: "Hi",
    tools,
    tool_choice: { type: "custom", name: "apply_patch" },
  });
  assert.deepEqual(anthropic.tool_choice, { type: "tool", name: "apply_patch" });
  const chat = responsesViaChat(testContext()).request({
    model: "m",
    input: "Hi",
    tools,
    tool_choice: { type: "function", namespace: "ns", name: "f" },
  });
  assert.deepEqual(chat.tool_choice, { type: "function", function: { name: "ns__f" } });
  const native = responsesViaChat({ ...testContext(), nativeCustomTools: true }).request({
    model: "m",
    input: "Hi",
    tools,
    tool_choice: { type: "custom", name: "apply_patch" },
  });
  assert.deepEqual(native.tool_choice, { type: "custom", custom: { name: "apply_patch" } });
});

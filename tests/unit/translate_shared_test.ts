/** @module Table-driven tests of the shared mapping tables: reasons, usage, tool names and ids, arguments. */
import assert from "node:assert/strict";
import { mergeAnthropicUsage } from "../../src/protocols/anthropic.ts";
import { usageFromChat } from "../../src/protocols/chat.ts";
import {
  chatUsage,
  clampMaxTokens,
  finishFromStop,
  parseToolArguments,
  responsesUsage,
  sanitizeToolId,
  shortenToolName,
  stopFromFinish,
  thinkingFromEffort,
  toolNames,
} from "../../src/translate/shared.ts";

const STOPS = [
  { stop: "end_turn", finish: "stop" },
  { stop: "stop_sequence", finish: "stop" },
  { stop: "max_tokens", finish: "length" },
  { stop: "tool_use", finish: "tool_calls" },
  { stop: "refusal", finish: "content_filter" },
  { stop: "pause_turn", finish: "stop" },
  { stop: "something_new", finish: "stop" },
];
for (const c of STOPS) {
  Deno.test(`finishFromStop() maps ${c.stop} to ${c.finish}`, () => assert.equal(finishFromStop(c.stop), c.finish));
}

const FINISHES = [
  { finish: "stop", stop: "end_turn" },
  { finish: "length", stop: "max_tokens" },
  { finish: "tool_calls", stop: "tool_use" },
  { finish: "function_call", stop: "tool_use" },
  { finish: "content_filter", stop: "refusal" },
  { finish: null, stop: "end_turn" },
];
for (const c of FINISHES) {
  Deno.test(`stopFromFinish() maps ${c.finish} to ${c.stop}`, () => assert.equal(stopFromFinish(c.finish), c.stop));
}

Deno.test("usageFromChat() subtracts cached tokens from the prompt", () => {
  const usage = usageFromChat({
    prompt_tokens: 100,
    completion_tokens: 7,
    prompt_tokens_details: { cached_tokens: 80 },
    completion_tokens_details: { reasoning_tokens: 3 },
  });
  assert.deepEqual(usage, { input: 20, output: 7, cacheRead: 80, cacheWrite: 0, reasoning: 3 });
});

Deno.test("chatUsage() and responsesUsage() count cache reads and writes in the prompt", () => {
  const usage = { input: 20, output: 7, cacheRead: 80, cacheWrite: 5, reasoning: 0 };
  assert.equal(chatUsage(usage).prompt_tokens, 105);
  assert.deepEqual(chatUsage(usage).prompt_tokens_details, { cached_tokens: 80 });
  assert.equal(responsesUsage(usage).input_tokens, 105);
  assert.equal(responsesUsage(usage).total_tokens, 112);
});

Deno.test("mergeAnthropicUsage() replaces only the fields a message_delta carries", () => {
  const start = { input: 9, output: 1, cacheRead: 4, cacheWrite: 0, reasoning: 0 };
  assert.deepEqual(mergeAnthropicUsage(start, { output_tokens: 12 }), { ...start, output: 12 });
  assert.deepEqual(mergeAnthropicUsage(start, { output_tokens: 12, input_tokens: 3 }), {
    ...start,
    output: 12,
    input: 3,
  });
});

const LONG = `mcp__${"server".repeat(6)}__${"a_very_long_tool_name".repeat(2)}`;
const NAMES = [
  { name: "get_time", want: "get_time" },
  { name: "a".repeat(64), want: "a".repeat(64) },
  { name: "with.dot", want: /^with_dot_[0-9a-f]{8}$/ },
  { name: LONG, want: /^mcp__server[a-z_]*_[0-9a-f]{8}$/ },
];
for (const c of NAMES) {
  Deno.test(`shortenToolName() gives an OpenAI-valid name for "${c.name.slice(0, 20)}…"`, () => {
    const got = shortenToolName(c.name);
    assert.match(got, /^[a-zA-Z0-9_-]{1,64}$/);
    if (typeof c.want === "string") assert.equal(got, c.want);
    else assert.match(got, c.want);
  });
}

Deno.test("toolNames() restores a shortened name and is stable across requests", () => {
  const names = toolNames();
  const short = names.toUpstream(LONG);
  assert.ok(short.length <= 64);
  assert.equal(names.toClient(short), LONG);
  assert.equal(toolNames().toUpstream(LONG), short);
  assert.notEqual(shortenToolName(`${LONG}x`), short);
  assert.equal(names.toClient("unknown"), "unknown");
});

const IDS = [
  { id: "call_abc-1", want: "call_abc-1" },
  { id: "functions.get_time:0", want: "functions_get_time_0" },
  { id: "", want: "fallback" },
  { id: undefined, want: "fallback" },
];
for (const c of IDS) {
  Deno.test(`sanitizeToolId() turns ${JSON.stringify(c.id)} into ${c.want}`, () => {
    assert.equal(sanitizeToolId(c.id, "fallback"), c.want);
  });
}

const ARGS = [
  { text: '{"a":1}', want: { a: 1 } },
  { text: "", want: {} },
  { text: "[1]", want: { _raw_arguments: "[1]" } },
  { text: '{"a":', want: { _raw_arguments: '{"a":' } },
];
for (const c of ARGS) {
  Deno.test(`parseToolArguments() reads ${JSON.stringify(c.text)}`, () => {
    assert.deepEqual(parseToolArguments(c.text), c.want);
  });
}

const EFFORTS = [
  { effort: "low", max: 8192, want: { type: "enabled", budget_tokens: 2048 } },
  { effort: "high", max: 8192, want: { type: "enabled", budget_tokens: 8191 } },
  { effort: "medium", max: 1000, want: undefined },
  { effort: "none", max: 8192, want: undefined },
  { effort: "minimal", max: 8192, want: undefined },
];
for (const c of EFFORTS) {
  Deno.test(`thinkingFromEffort() fits ${c.effort} into max_tokens ${c.max}`, () => {
    assert.deepEqual(thinkingFromEffort(c.effort, c.max), c.want);
  });
}

const CLAMPS = [
  { value: 32000, ceiling: 8192, want: 8192 },
  { value: 100, ceiling: 8192, want: 100 },
  { value: 32000, ceiling: undefined, want: 32000 },
  { value: undefined, ceiling: 8192, want: undefined },
  { value: 0, ceiling: undefined, want: undefined },
];
for (const c of CLAMPS) {
  Deno.test(`clampMaxTokens() lowers ${c.value} to the ceiling ${c.ceiling}`, () => {
    assert.equal(clampMaxTokens(c.value, c.ceiling), c.want);
  });
}

/**
 * @module Freeform and namespaced tools on their own: the function form and reading raw input back, flattened
 * names that fit the upstreams and map back one to one, provider-only tools logged one by one, and the writer's
 * custom_tool_call events.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../src/core/errors.ts";
import { NO_USAGE } from "../../src/core/usage.ts";
import { freeformDescription, freeformInput } from "../../src/translate/freeform_tools.ts";
import { flatToolName, responsesTools } from "../../src/translate/responses_tools.ts";
import { responsesWriter } from "../../src/translate/responses_writer.ts";
import { testContext } from "../_translate_helpers.ts";

const RAW = 'line 1\nline "2" \\ ✓\n';

const INPUTS = [
  { name: "the input string of the function form", args: JSON.stringify({ input: RAW }), want: RAW },
  { name: "an object (Anthropic's input)", args: { input: RAW }, want: RAW },
  { name: "the one string under another name", args: { patch: RAW }, want: RAW },
  { name: "text that is not JSON, as written", args: "*** Begin Patch", want: "*** Begin Patch" },
  { name: "an object with other fields, as its JSON", args: { a: "x", b: 2 }, want: '{"a":"x","b":2}' },
  { name: "a JSON string that is not an object, as written", args: '"just text"', want: '"just text"' },
  { name: "no arguments as an empty input", args: {}, want: "" },
  { name: "empty argument text as an empty input", args: "", want: "" },
];
for (const c of INPUTS) {
  Deno.test(`freeformInput() reads ${c.name}`, () => assert.equal(freeformInput(c.args), c.want));
}

Deno.test("freeformDescription() names the syntax, and leaves out a grammar too long to be worth its tokens", () => {
  const regex = freeformDescription("Dates.", { type: "grammar", syntax: "regex", definition: "^\\d{4}$" });
  assert.match(regex, /^Dates\.\n\n/);
  assert.match(regex, /regular expression:\n\^\\d\{4\}\$$/);
  const chat = freeformDescription(undefined, { type: "grammar", grammar: { syntax: "lark", definition: "start: A" } });
  assert.match(chat, /lark grammar:\nstart: A$/, "the chat API's nested grammar is read too");
  const long = freeformDescription("X", { type: "grammar", syntax: "lark", definition: "a".repeat(9000) });
  assert.ok(!long.includes("aaaa") && /follow the tool's lark grammar/.test(long));
  assert.ok(!freeformDescription("T", { type: "text" }).includes("grammar"));
});

Deno.test("flatToolName() joins namespace and name and keeps long ones within 64 safe characters", () => {
  assert.equal(flatToolName("spawn_agent", "multi_agent_v1"), "multi_agent_v1__spawn_agent");
  assert.equal(flatToolName("exec_command"), "exec_command");
  const long = flatToolName("a_tool_with_a_rather_long_name_indeed", "mcp__a_server_with_a_long_name__");
  assert.match(long, /^[a-zA-Z0-9_-]{1,64}$/);
  assert.equal(long, flatToolName("a_tool_with_a_rather_long_name_indeed", "mcp__a_server_with_a_long_name__"));
  assert.notEqual(long, flatToolName("a_tool_with_a_rather_long_name_indeed2", "mcp__a_server_with_a_long_name__"));
  assert.match(flatToolName("read.file", "fs"), /^[a-zA-Z0-9_-]{1,64}$/, "dots are not allowed upstream");
});

Deno.test("responsesTools() maps every offered name back to the client's kind, namespace and name", () => {
  const ns = "mcp__a_server_with_a_long_name__";
  const tools = responsesTools([
    { type: "function", name: "shell", parameters: { type: "object" } },
    { type: "custom", name: "apply_patch", format: { type: "text" } },
    {
      type: "namespace",
      name: ns,
      description: "A server.",
      tools: [
        { type: "function", name: "a_tool_with_a_rather_long_name_indeed", description: "Does it." },
        { type: "custom", name: "raw_tool" },
      ],
    },
  ], testContext());
  const names = tools.offered.map((t) => t.name);
  assert.equal(names.length, 4);
  assert.deepEqual(names.map((n) => tools.clientTool(n)), [
    { name: "shell", custom: false },
    { name: "apply_patch", custom: true },
    { name: "a_tool_with_a_rather_long_name_indeed", namespace: ns, custom: false },
    { name: "raw_tool", namespace: ns, custom: true },
  ]);
  assert.equal(tools.offered[2].description, "A server.\n\nDoes it.");
  assert.deepEqual(tools.clientTool("never_offered"), { name: "never_offered", custom: false });
});

Deno.test("responsesTools() refuses two tools that would share one upstream name, naming the second", () => {
  assert.throws(
    () =>
      responsesTools([
        { type: "function", name: "ns__tool" },
        { type: "namespace", name: "ns", tools: [{ type: "function", name: "tool" }] },
      ], testContext()),
    (err) => err instanceof GatewayError && err.status === 400 && err.param === "tools[1].tools[0]",
  );
});

Deno.test("responsesTools() drops each provider-only tool with one log line", () => {
  const logs: Record<string, unknown>[] = [];
  const kinds = ["web_search", "tool_search", "file_search", "computer_use_preview", "local_shell", "mcp"];
  const tools = responsesTools(
    [...kinds.map((type) => ({ type })), { type: "function", name: "f" }],
    testContext(logs),
  );
  assert.deepEqual(tools.offered.map((t) => t.name), ["f"]);
  assert.deepEqual(logs.map((l) => [l.event, l.field, l.type]), kinds.map((k) => ["translate_drop", "tools", k]));
});

Deno.test("responsesWriter() streams a freeform call as custom_tool_call input events", () => {
  const writer = responsesWriter(testContext());
  const events = [
    ...writer.callStart("call_1", { name: "apply_patch", namespace: "ns", custom: true }),
    ...writer.callArguments("a\n"),
    ...writer.callArguments("b"),
    ...writer.finish("completed", NO_USAGE),
  ].map((m) => JSON.parse(m.data));
  assert.deepEqual(events.map((e) => e.type), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.output_item.done",
    "response.completed",
  ]);
  const item = events[6].item;
  assert.deepEqual(
    [item.type, item.call_id, item.namespace, item.name, item.input, item.status],
    ["custom_tool_call", "call_1", "ns", "apply_patch", "a\nb", "completed"],
  );
  assert.equal(events[5].input, "a\nb");
  assert.equal(events[5].item_id, item.id);
});

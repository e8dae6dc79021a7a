/** @module The demo upstream's answers, decided from the request alone: the tool it calls, its arguments, its texts. */
import assert from "node:assert/strict";
import { argumentsFor, demoAnswer } from "../../src/providers/demo_answer.ts";
import type { JsonObject } from "../../src/core/types.ts";

const ID = "toolu_demo_x";
const user = (content: unknown) => ({ role: "user", content });
const tool = (name: string, schema: JsonObject = { type: "object", properties: {} }) => ({
  name,
  input_schema: schema,
});
const BASH = tool("Bash", { type: "object", properties: { command: { type: "string" } }, required: ["command"] });
const GLOB = tool("Glob", { type: "object", properties: { pattern: { type: "string" } }, required: ["pattern"] });
const WEATHER = tool("get_weather", {
  type: "object",
  properties: { city: { type: "string" }, unit: { enum: ["c", "f"] } },
  required: ["city", "unit"],
});

/** The tool a request makes the demo call, with its arguments, or undefined for a text answer. */
function called(body: JsonObject): { name: string; input: JsonObject } | undefined {
  const block = demoAnswer({ max_tokens: 1024, ...body }, ID).content.find((b) => b.type === "tool_use");
  return block?.type === "tool_use" ? { name: block.name, input: block.input } : undefined;
}

const CHOICES: { name: string; body: JsonObject; expect: string | undefined }[] = [
  { name: "no tools: a text", body: { messages: [user("Hi")] }, expect: undefined },
  { name: "one tool: that one", body: { messages: [user("Hi")], tools: [WEATHER] }, expect: "get_weather" },
  { name: "a lister before a runner", body: { messages: [user("Hi")], tools: [WEATHER, BASH, GLOB] }, expect: "Glob" },
  { name: "a runner before the first", body: { messages: [user("Hi")], tools: [WEATHER, BASH] }, expect: "Bash" },
  {
    name: "tool_choice none: a text",
    body: { messages: [user("Hi")], tools: [GLOB], tool_choice: { type: "none" } },
    expect: undefined,
  },
  {
    name: "tool_choice names one: that one",
    body: { messages: [user("Hi")], tools: [GLOB, WEATHER], tool_choice: { type: "tool", name: "get_weather" } },
    expect: "get_weather",
  },
  {
    name: "a server tool (no schema) is never called",
    body: { messages: [user("Hi")], tools: [{ type: "web_search_20250305", name: "web_search" }] },
    expect: undefined,
  },
];

for (const { name, body, expect } of CHOICES) {
  Deno.test(`demo answer: ${name}`, () => {
    assert.equal(called(body)?.name, expect);
  });
}

Deno.test("demo answer: a tool call comes with its arguments, its id and stop_reason tool_use", () => {
  const answer = demoAnswer({ max_tokens: 1024, messages: [user("Hi")], tools: [GLOB] }, ID);
  assert.equal(answer.stop_reason, "tool_use");
  assert.deepEqual(answer.content.at(-1), { type: "tool_use", id: ID, name: "Glob", input: { pattern: "*" } });
  assert.ok(answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0);
});

const SCHEMAS: { name: string; schema: JsonObject; expect: JsonObject }[] = [
  { name: "only required properties", schema: WEATHER.input_schema, expect: { city: "demo", unit: "c" } },
  {
    name: "a command as a string or as words lists the folder",
    schema: {
      type: "object",
      properties: { command: { type: "array", items: { type: "string" } }, cmd: { type: "string" } },
      required: ["command", "cmd"],
    },
    expect: { command: ["ls"], cmd: "ls" },
  },
  {
    name: "paths are the folder; numbers their minimum; booleans false",
    schema: {
      type: "object",
      properties: {
        file_path: { type: "string" },
        limit: { type: "integer", minimum: 5 },
        n: { type: "number" },
        all: { type: "boolean" },
      },
      required: ["file_path", "limit", "n", "all"],
    },
    expect: { file_path: ".", limit: 5, n: 1, all: false },
  },
  {
    name: "nested objects, defaults, consts, unions and arrays with a minimum",
    schema: {
      type: "object",
      properties: {
        opts: { type: "object", properties: { depth: { type: "integer", default: 2 } }, required: ["depth"] },
        kind: { const: "x" },
        either: { anyOf: [{ type: "boolean" }, { type: "string" }] },
        tags: { type: "array", items: { type: "string" }, minItems: 1 },
        none: { type: "array", items: { type: "string" } },
      },
      required: ["opts", "kind", "either", "tags", "none"],
    },
    expect: { opts: { depth: 2 }, kind: "x", either: false, tags: ["demo"], none: [] },
  },
];

for (const { name, schema, expect } of SCHEMAS) {
  Deno.test(`demo arguments: ${name}`, () => {
    assert.deepEqual(argumentsFor(schema), expect);
  });
}

const LOOP = [
  user("List the files"),
  {
    role: "assistant",
    content: [{ type: "text", text: "I'll call Glob." }, { type: "tool_use", id: "toolu_1", name: "Glob", input: {} }],
  },
];

Deno.test("demo answer: once the tool's result is in, a text that names the tool and quotes the result", () => {
  const messages = [...LOOP, user([{ type: "tool_result", tool_use_id: "toolu_1", content: "notes.txt\nREADME.md" }])];
  const answer = demoAnswer({ max_tokens: 1024, messages, tools: [GLOB] }, ID);
  assert.equal(answer.stop_reason, "end_turn");
  assert.equal(answer.content.length, 1);
  const text = answer.content[0].type === "text" ? answer.content[0].text : "";
  assert.match(text, /^Glob answered: "notes\.txt README\.md"/);
});

Deno.test("demo answer: a failed tool's result (blocks of text) is quoted as a failure", () => {
  const result = {
    type: "tool_result",
    tool_use_id: "toolu_1",
    is_error: true,
    content: [{ type: "text", text: "no" }],
  };
  const answer = demoAnswer({ max_tokens: 1024, messages: [...LOOP, user([result])] }, ID);
  assert.match(answer.content[0].type === "text" ? answer.content[0].text : "", /^Glob failed with: "no"/);
});

Deno.test("demo answer: the text quotes the last user message, and the same request gets the same answer", () => {
  const body = { max_tokens: 1024, messages: [user([{ type: "text", text: "What is  this?" }])] };
  const answer = demoAnswer(body, ID);
  assert.match(answer.content[0].type === "text" ? answer.content[0].text : "", /You wrote: "What is this\?"/);
  assert.deepEqual(demoAnswer(structuredClone(body), ID), answer);
});

Deno.test("demo answer: a max_tokens smaller than the text cuts it and says max_tokens", () => {
  const answer = demoAnswer({ max_tokens: 3, messages: [user("Hi")], tools: [GLOB] }, ID);
  assert.equal(answer.stop_reason, "max_tokens");
  assert.deepEqual(answer.content.map((b) => b.type), ["text"]);
  assert.equal(answer.content[0].type === "text" && answer.content[0].text.length, 12);
});

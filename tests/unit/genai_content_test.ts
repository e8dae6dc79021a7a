/**
 * @module Prompt and answer text in the GenAI conventions' message shape, for each client protocol and each upstream
 * answer: roles, text, reasoning, tool calls and results, system instructions apart, media named but never copied.
 */
import assert from "node:assert/strict";
import { inputContent, outputContent } from "../../src/observe/genai_content.ts";

const IMAGE = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } };

const INPUTS = [
  {
    name: "Anthropic Messages",
    protocol: "anthropic" as const,
    body: {
      system: "Be brief.",
      messages: [
        { role: "user", content: [{ type: "text", text: "Hi" }, IMAGE] },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "look", input: { q: 1 } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "found" }] },
      ],
    },
    want: {
      system: [{ type: "text", content: "Be brief." }],
      messages: [
        { role: "user", parts: [{ type: "text", content: "Hi" }, { type: "image" }] },
        { role: "assistant", parts: [{ type: "tool_call", id: "t1", name: "look", arguments: { q: 1 } }] },
        { role: "user", parts: [{ type: "tool_call_response", id: "t1", response: "found" }] },
      ],
    },
  },
  {
    name: "Chat Completions",
    protocol: "openai-chat" as const,
    body: {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Hi" }] },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: '{"q":1}' } }],
        },
        { role: "tool", tool_call_id: "c1", content: "found" },
      ],
    },
    want: {
      system: [{ type: "text", content: "Be brief." }],
      messages: [
        { role: "user", parts: [{ type: "text", content: "Hi" }] },
        { role: "assistant", parts: [{ type: "tool_call", id: "c1", name: "look", arguments: '{"q":1}' }] },
        { role: "tool", parts: [{ type: "tool_call_response", id: "c1", response: "found" }] },
      ],
    },
  },
  {
    name: "Responses",
    protocol: "openai-responses" as const,
    body: {
      instructions: "Be brief.",
      input: [
        { role: "user", content: [{ type: "input_text", text: "Hi" }] },
        { type: "function_call", call_id: "f1", name: "look", arguments: "{}" },
        { type: "function_call_output", call_id: "f1", output: "found" },
      ],
    },
    want: {
      system: [{ type: "text", content: "Be brief." }],
      messages: [
        { role: "user", parts: [{ type: "text", content: "Hi" }] },
        { role: "assistant", parts: [{ type: "tool_call", id: "f1", name: "look", arguments: "{}" }] },
        { role: "tool", parts: [{ type: "tool_call_response", id: "f1", response: "found" }] },
      ],
    },
  },
  {
    name: "Gemini",
    protocol: "gemini" as const,
    body: {
      systemInstruction: { parts: [{ text: "Be brief." }] },
      contents: [
        { role: "user", parts: [{ text: "Hi" }, { inlineData: { mimeType: "image/png", data: "AAAA" } }] },
        {
          role: "model",
          parts: [{ text: "hm", thought: true }, {
            functionCall: { name: "look", args: { q: 1 } },
            thoughtSignature: "c2ln",
          }],
        },
        { role: "user", parts: [{ functionResponse: { name: "look", response: { found: true } } }] },
      ],
    },
    want: {
      system: [{ type: "text", content: "Be brief." }],
      messages: [
        { role: "user", parts: [{ type: "text", content: "Hi" }, { type: "inlineData" }] },
        {
          role: "assistant",
          parts: [{ type: "reasoning", content: "hm" }, { type: "tool_call", name: "look", arguments: { q: 1 } }],
        },
        { role: "user", parts: [{ type: "tool_call_response", response: { found: true } }] },
      ],
    },
  },
];
for (const c of INPUTS) {
  Deno.test(`inputContent() gives a ${c.name} request's messages and system instructions apart`, () => {
    const out = inputContent(c.protocol, c.body);
    assert.deepEqual(JSON.parse(out["gen_ai.input.messages"]), c.want.messages);
    assert.deepEqual(JSON.parse(out["gen_ai.system_instructions"]), c.want.system);
    assert.ok(!out["gen_ai.input.messages"].includes("AAAA"), "media is never copied");
  });
}

Deno.test("inputContent() takes a Responses input given as a string", () => {
  const out = inputContent("openai-responses", { input: "Hi" });
  assert.deepEqual(JSON.parse(out["gen_ai.input.messages"]), [{
    role: "user",
    parts: [{ type: "text", content: "Hi" }],
  }]);
  assert.equal(out["gen_ai.system_instructions"], undefined);
});

const OUTPUTS = [
  {
    name: "an Anthropic message",
    body: {
      type: "message",
      content: [{ type: "thinking", thinking: "hm" }, { type: "text", text: "Hello" }],
      stop_reason: "end_turn",
    },
    want: [{
      role: "assistant",
      parts: [{ type: "reasoning", content: "hm" }, { type: "text", content: "Hello" }],
      finish_reason: "end_turn",
    }],
  },
  {
    name: "a chat completion",
    body: { choices: [{ message: { role: "assistant", content: "Hello" }, finish_reason: "stop" }] },
    want: [{ role: "assistant", parts: [{ type: "text", content: "Hello" }], finish_reason: "stop" }],
  },
  {
    name: "a Responses answer",
    body: {
      object: "response",
      status: "completed",
      output: [
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Plan." }], encrypted_content: "E" },
        {
          type: "message",
          role: "assistant",
          content: [{ type: "output_text", text: "Hello", annotations: [] }, { type: "refusal", refusal: "No." }],
        },
        { type: "function_call", call_id: "call_1", name: "read_file", arguments: '{"path":"a"}' },
        { type: "web_search_call", id: "ws_1", status: "completed" },
      ],
    },
    want: [{
      role: "assistant",
      parts: [
        { type: "reasoning", content: "Plan." },
        { type: "text", content: "Hello" },
        { type: "text", content: "No." },
        { type: "tool_call", id: "call_1", name: "read_file", arguments: '{"path":"a"}' },
        { type: "web_search_call" },
      ],
      finish_reason: "completed",
    }],
  },
  {
    name: "an incomplete Responses answer",
    body: {
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
      output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text: "Hel" }] }],
    },
    want: [{ role: "assistant", parts: [{ type: "text", content: "Hel" }], finish_reason: "max_output_tokens" }],
  },
  {
    name: "a Gemini answer",
    body: { candidates: [{ content: { role: "model", parts: [{ text: "Hello" }] }, finishReason: "STOP" }] },
    want: [{ role: "assistant", parts: [{ type: "text", content: "Hello" }], finish_reason: "STOP" }],
  },
];
for (const c of OUTPUTS) {
  Deno.test(`outputContent() gives ${c.name} as output messages with its finish reason`, () => {
    assert.deepEqual(JSON.parse(outputContent(c.body)["gen_ai.output.messages"]), c.want);
  });
}

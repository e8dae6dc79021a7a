/**
 * @module Odd but schema-valid request bodies never crash a translator: each field of a rich request, and of its
 * first message or item, is replaced by values of every JSON type, and the outcome must be a translated body or a
 * GatewayError (a 400 naming the field), never a TypeError.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../src/core/errors.ts";
import { checkBody } from "../../src/protocols/checks.ts";
import type { JsonObject, Protocol } from "../../src/core/types.ts";
import { testContext, translatedPairs } from "../_translate_helpers.ts";

const ODD_VALUES: unknown[] = [null, 0, 1.5, -1, "", "x", true, [], [null], [1, "a"], {}, { type: "x" }];

const SCHEMA = { type: "object", properties: {} };

const RICH: Record<Protocol, JsonObject> = {
  anthropic: {
    model: "m",
    max_tokens: 64,
    system: [{ type: "text", text: "S" }],
    messages: [
      {
        role: "assistant",
        content: [{ type: "thinking", thinking: "t", signature: "s" }, {
          type: "tool_use",
          id: "a",
          name: "f",
          input: {},
        }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: "r" }] },
    ],
    tools: [{ name: "f", input_schema: SCHEMA }],
    tool_choice: { type: "tool", name: "f" },
    stop_sequences: ["x"],
    thinking: { type: "enabled", budget_tokens: 2048 },
    metadata: { user_id: "u" },
    stream: true,
  },
  "openai-chat": {
    model: "m",
    messages: [
      { role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: { name: "f" } }] },
      { role: "tool", tool_call_id: "a", content: [{ type: "text", text: "r" }] },
    ],
    tools: [{ type: "function", function: { name: "f", parameters: SCHEMA } }],
    tool_choice: { type: "function", function: { name: "f" } },
    stop: ["x"],
    reasoning_effort: "low",
    max_tokens: 4000,
    stream_options: { include_usage: true },
  },
  "openai-responses": {
    model: "m",
    instructions: "I",
    input: [
      { type: "function_call", call_id: "a", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "a", output: "r" },
      { type: "message", role: "user", content: [{ type: "input_image", image_url: "data:image/png;base64,AA" }] },
    ],
    tools: [{ type: "function", name: "f", parameters: SCHEMA }],
    tool_choice: { type: "function", name: "f" },
    reasoning: { effort: "low" },
    text: { format: { type: "json_schema", name: "n", schema: SCHEMA } },
    max_output_tokens: 4000,
  },
  gemini: {
    model: "m",
    systemInstruction: { parts: [{ text: "S" }] },
    contents: [
      {
        role: "model",
        parts: [{ text: "t", thought: true, thoughtSignature: "AA" }, {
          functionCall: { id: "a", name: "f", args: {} },
        }],
      },
      {
        role: "user",
        parts: [{ functionResponse: { id: "a", name: "f", response: { output: "r" } } }, {
          inlineData: { mimeType: "image/png", data: "AA" },
        }],
      },
    ],
    tools: [{ functionDeclarations: [{ name: "f", parameters: SCHEMA }] }],
    toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["f"] } },
    generationConfig: { maxOutputTokens: 4000, stopSequences: ["x"], thinkingConfig: { thinkingBudget: 2048 } },
  },
};

/** Every body with one field (top level, first message or item, or its first content block) made odd. */
function variants(body: JsonObject): JsonObject[] {
  const out: JsonObject[] = [];
  const list = (body.messages ?? body.input ?? body.contents) as JsonObject[];
  const listKey = body.messages ? "messages" : body.contents ? "contents" : "input";
  for (const value of ODD_VALUES) {
    for (const key of Object.keys(body)) out.push({ ...body, [key]: value });
    list.forEach((entry, i) => {
      for (const key of Object.keys(entry)) {
        const changed = structuredClone(list);
        changed[i] = { ...entry, [key]: value };
        out.push({ ...body, [listKey]: changed });
      }
      const content = entry.content ?? entry.tool_calls ?? entry.parts;
      if (Array.isArray(content) && content.length > 0) {
        for (const key of Object.keys(content[0])) {
          const changed = structuredClone(list);
          const blocks = structuredClone(content);
          blocks[0] = { ...blocks[0], [key]: value };
          changed[i] = { ...entry, [entry.content ? "content" : entry.parts ? "parts" : "tool_calls"]: blocks };
          out.push({ ...body, [listKey]: changed });
        }
      }
    });
  }
  return out;
}

for (const { pair, client, translator } of translatedPairs()) {
  Deno.test(`${pair} answers odd field values with a translation or a 400, never a crash`, () => {
    let translated = 0;
    for (const body of variants(RICH[client])) {
      try {
        checkBody(client, "generate", body);
        translator(testContext()).request(body);
        translated++;
      } catch (err) {
        if (!(err instanceof GatewayError)) assert.fail(`${JSON.stringify(body)} threw ${err}`);
        assert.equal(err.status, 400);
      }
    }
    assert.ok(translated > 0);
  });
}

/**
 * @module Each row of docs/protocols.md's table "Gemini client, Anthropic or chat upstream", over real HTTP: a Gemini
 * client's request as an Anthropic upstream gets it (the other direction is gemini_mapping_upstream_test.ts).
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { geminiCall } from "../_gemini_reader.ts";
import { fixture, readText, startGateway } from "../_helpers.ts";
import type { MappingRow as Row, Obj } from "../_mapping_rows.ts";
import { thoughtSignatureFor } from "../../src/translate/gemini_messages_request.ts";

const HI = { role: "user", parts: [{ text: "Hi" }] };
const messages = (sent: Obj) => sent.messages;
const THINKING = { type: "thinking", thinking: "Plan.", signature: "sig-anthropic" };

/** docs/protocols.md, "Gemini client, Anthropic or chat upstream". */
const GEMINI_TO_MESSAGES: Row[] = [
  {
    row: "systemInstruction text parts",
    request: { systemInstruction: { parts: [{ text: "Be brief." }, { text: "Be kind." }] } },
    pick: (sent) => sent.system,
    want: "Be brief.\nBe kind.",
  },
  {
    row: "systemInstruction as a string",
    request: { systemInstruction: "Be brief." },
    pick: (sent) => sent.system,
    want: "Be brief.",
  },
  {
    row: "contents roles: none means user, same-role turns merge, a leading model turn gets ...",
    request: {
      contents: [{ role: "model", parts: [{ text: "Earlier." }] }, { parts: [{ text: "Hi" }] }, {
        role: "user",
        parts: [{ text: "again" }],
      }],
    },
    pick: messages,
    want: [
      { role: "user", content: [{ type: "text", text: "..." }] },
      { role: "assistant", content: [{ type: "text", text: "Earlier." }] },
      { role: "user", content: [{ type: "text", text: "Hi" }, { type: "text", text: "again" }] },
    ],
  },
  {
    row: "text parts, empty and whitespace-only left out",
    request: { contents: [{ role: "user", parts: [{ text: "" }, { text: "  " }, { text: "Hi" }] }] },
    pick: messages,
    want: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
  },
  {
    row: "inlineData image, PDF and text/*",
    request: {
      contents: [{
        role: "user",
        parts: [
          { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
          { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
          { inlineData: { mimeType: "text/markdown", data: btoa("# Notes") } },
        ],
      }],
    },
    pick: (sent) => (sent.messages as Obj[])[0].content,
    want: [
      { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } },
      { type: "document", source: { type: "text", media_type: "text/plain", data: "# Notes" } },
    ],
  },
  {
    row: "fileData https image and PDF URIs; a gs:// URI has no equivalent",
    request: {
      contents: [{
        role: "user",
        parts: [
          { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/cat.jpg" } },
          { fileData: { mimeType: "application/pdf", fileUri: "https://example.com/a.pdf" } },
          { fileData: { mimeType: "image/png", fileUri: "gs://bucket/b.png" } },
          { text: "What are these?" },
        ],
      }],
    },
    pick: (sent) => (sent.messages as Obj[])[0].content,
    want: [
      { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
      { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
      { type: "text", text: "What are these?" },
    ],
  },
  {
    row: "functionCall with and without an id; functionResponse by id, else the earliest open call of its name",
    request: {
      contents: [
        HI,
        {
          role: "model",
          parts: [
            { functionCall: { id: "call_a", name: "get_time", args: { tz: "UTC" } } },
            { functionCall: { name: "get_time", args: { tz: "CET" } } },
            { functionCall: { name: "get_time", args: { tz: "JST" } } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "get_time", response: { output: "12:00" } } },
            { functionResponse: { id: "call_a", name: "get_time", response: { error: "no zone" } } },
            { functionResponse: { name: "get_time", response: { time: "21:00" } } },
          ],
        },
      ],
    },
    pick: (sent) => (sent.messages as Obj[]).slice(1),
    want: [
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "call_a", name: "get_time", input: { tz: "UTC" } },
          { type: "tool_use", id: "toolu_gm1_1", name: "get_time", input: { tz: "CET" } },
          { type: "tool_use", id: "toolu_gm1_2", name: "get_time", input: { tz: "JST" } },
        ],
      },
      {
        role: "user",
        content: [
          // The id-less response goes to the earliest call not answered by id in the same turn.
          { type: "tool_result", tool_use_id: "toolu_gm1_1", content: "12:00" },
          { type: "tool_result", tool_use_id: "call_a", content: "no zone", is_error: true },
          { type: "tool_result", tool_use_id: "toolu_gm1_2", content: '{"time":"21:00"}' },
        ],
      },
    ],
  },
  {
    row: "a thought part is dropped; a thoughtSignature the gateway made restores its thinking block first",
    request: {
      contents: [
        HI,
        {
          role: "model",
          parts: [{ text: "Answer." }, {
            text: "Plan.",
            thought: true,
            thoughtSignature: thoughtSignatureFor(THINKING),
          }],
        },
        { role: "user", parts: [{ text: "More" }] },
      ],
    },
    pick: (sent) => (sent.messages as Obj[])[1],
    want: { role: "assistant", content: [THINKING, { type: "text", text: "Answer." }] },
  },
  {
    row: "functionDeclarations: parameters (types lower-cased, nullable) and parametersJsonSchema",
    request: {
      tools: [{
        functionDeclarations: [
          {
            name: "a",
            description: "A",
            parameters: { type: "OBJECT", properties: { x: { type: "STRING", nullable: true } }, required: ["x"] },
          },
          { name: "b", parametersJsonSchema: { type: "object", properties: { y: { const: 1 } } } },
        ],
      }],
    },
    pick: (sent) => sent.tools,
    want: [
      {
        name: "a",
        description: "A",
        input_schema: { type: "object", properties: { x: { type: ["string", "null"] } }, required: ["x"] },
      },
      { name: "b", input_schema: { type: "object", properties: { y: { const: 1 } } } },
    ],
  },
  {
    row: "googleSearch, codeExecution and urlContext are dropped",
    request: {
      tools: [{ googleSearch: {} }, { codeExecution: {} }, { urlContext: {}, functionDeclarations: [{ name: "f" }] }],
    },
    pick: (sent) => (sent.tools as Obj[]).map((t) => t.name),
    want: ["f"],
  },
  ...([
    ["AUTO", [], { type: "auto" }],
    ["VALIDATED", [], { type: "auto" }],
    ["ANY", [], { type: "any" }],
    ["ANY", ["f"], { type: "tool", name: "f" }],
    ["NONE", [], { type: "none" }],
  ] as const).map(([mode, allowedFunctionNames, want]): Row => ({
    row: `functionCallingConfig mode ${mode}${allowedFunctionNames.length ? " with one allowed name" : ""}`,
    request: {
      tools: [{ functionDeclarations: [{ name: "f" }, { name: "g" }] }],
      toolConfig: { functionCallingConfig: { mode, allowedFunctionNames } },
    },
    pick: (sent) => sent.tool_choice,
    want,
  })),
  {
    row: "maxOutputTokens",
    request: { generationConfig: { maxOutputTokens: 77 } },
    pick: (sent) => sent.max_tokens,
    want: 77,
  },
  {
    row: "no maxOutputTokens: default_max_tokens",
    request: { generationConfig: { temperature: 0.5 } },
    pick: (sent) => sent.max_tokens,
    want: 4096,
  },
  {
    row: "temperature (at most 1), topP, topK, stopSequences",
    request: { generationConfig: { temperature: 1.5, topP: 0.9, topK: 40, stopSequences: ["END"] } },
    pick: ({ temperature, top_p, top_k, stop_sequences }) => ({ temperature, top_p, top_k, stop_sequences }),
    want: { temperature: 1, top_p: 0.9, top_k: 40, stop_sequences: ["END"] },
  },
  {
    row: "sampling is left out with thinking",
    request: {
      generationConfig: {
        temperature: 0.5,
        topP: 0.9,
        topK: 40,
        maxOutputTokens: 8000,
        thinkingConfig: { thinkingBudget: 2000 },
      },
    },
    pick: (sent) => [sent.temperature, sent.top_p, sent.top_k, sent.thinking],
    want: [undefined, undefined, undefined, { type: "enabled", budget_tokens: 2000 }],
  },
  ...([
    ["thinkingBudget N", { thinkingBudget: 3000 }, { type: "enabled", budget_tokens: 3000 }],
    ["thinkingBudget below 1024 rises to 1024", { thinkingBudget: 100 }, { type: "enabled", budget_tokens: 1024 }],
    ["thinkingBudget -1 is medium", { thinkingBudget: -1 }, { type: "enabled", budget_tokens: 8192 }],
    ["thinkingBudget 0 is none", { thinkingBudget: 0 }, undefined],
    ["thinkingLevel low as an effort", { thinkingLevel: "low" }, { type: "enabled", budget_tokens: 2048 }],
    ["thinkingLevel HIGH as an effort", { thinkingLevel: "HIGH" }, { type: "enabled", budget_tokens: 16384 }],
  ] as const).map(([row, thinkingConfig, want]): Row => ({
    row: `thinkingConfig ${row}`,
    request: { generationConfig: { maxOutputTokens: 20000, thinkingConfig } },
    pick: (sent) => sent.thinking,
    want,
  })),
];

for (const c of GEMINI_TO_MESSAGES) {
  Deno.test(`Gemini client -> Anthropic upstream: ${c.row}`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /anth/v1/messages", () => jsonReply(JSON.parse(fixture("anthropic/text.json"))));
    await using gw = await startGateway(upstream.url);
    const res = await geminiCall(gw, "/v1beta/models/claude-test:generateContent", { contents: [HI], ...c.request });
    assert.equal(res.status, 200, await readText(res));
    assert.deepEqual(c.pick(upstream.requests[0].body!), c.want);
  });
}

Deno.test("Gemini client -> Anthropic upstream: candidateCount above 1 is a 400 naming it", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const res = await geminiCall(gw, "/v1beta/models/claude-test:generateContent", {
    contents: [HI],
    generationConfig: { candidateCount: 2 },
  });
  const error = JSON.parse(await readText(res)).error;
  assert.deepEqual([res.status, error.status], [400, "INVALID_ARGUMENT"]);
  assert.match(error.message, /generationConfig\.candidateCount/);
  assert.equal(upstream.requests.length, 0);
});

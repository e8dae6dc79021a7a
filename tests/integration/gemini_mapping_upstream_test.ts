/**
 * @module Each row of docs/protocols.md's table "Anthropic Messages client, Gemini upstream", over real HTTP: an
 * Anthropic client's request as the fake Gemini API (which refuses what the real one refuses) gets it.
 */
import assert from "node:assert/strict";
import { fakeUpstream } from "../_fake_upstream.ts";
import { GEMINI_KEY, geminiResponder, geminiUpstreamYaml } from "../_gemini_upstream.ts";
import { readText, startGateway } from "../_helpers.ts";
import type { MappingRow as Row, Obj } from "../_mapping_rows.ts";
import { idWithSignature, SKIP_SIGNATURE } from "../../src/translate/messages_gemini_request.ts";

const HI = { role: "user", content: "Hi" };
const contents = (sent: Obj) => sent.contents;
const config = (sent: Obj) => sent.generationConfig;
const SIGNED = idWithSignature("toolu_1", "c2lnLTE=");
const TOOL = { name: "f", input_schema: { type: "object", properties: { x: { type: "string" } } } };

const ROWS: Row[] = [
  {
    row: "system as a string and as blocks",
    request: { system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Be kind." }] },
    pick: (sent) => sent.systemInstruction,
    want: { parts: [{ text: "Be brief.\nBe kind." }] },
  },
  {
    row: "user / assistant turns become user / model; same-role turns merge",
    request: {
      messages: [HI, { role: "user", content: "again" }, { role: "assistant", content: "Yes?" }, {
        role: "user",
        content: "Go",
      }],
    },
    pick: contents,
    want: [
      { role: "user", parts: [{ text: "Hi" }, { text: "again" }] },
      { role: "model", parts: [{ text: "Yes?" }] },
      { role: "user", parts: [{ text: "Go" }] },
    ],
  },
  {
    row: "text; image and document with base64 source; a plain-text document; URL sources dropped",
    request: {
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Look" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } },
          { type: "document", source: { type: "text", media_type: "text/plain", data: "Notes" } },
          { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
        ],
      }],
    },
    pick: contents,
    want: [{
      role: "user",
      parts: [
        { text: "Look" },
        { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
        { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
        { text: "Notes" },
      ],
    }],
  },
  {
    row: "tool_use with the signature its id carries, the stand-in when the first has none; tool_result (is_error)",
    request: {
      messages: [
        HI,
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "Plan.", signature: "sig" },
            { type: "redacted_thinking", data: "opaque" },
            { type: "tool_use", id: SIGNED, name: "f", input: { x: "1" } },
            { type: "tool_use", id: "toolu_2", name: "g", input: {} },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: SIGNED, content: "one" },
            { type: "tool_result", tool_use_id: "toolu_2", content: [{ type: "text", text: "bad" }], is_error: true },
          ],
        },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_3", name: "f", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_3", content: "three" }] },
        { role: "assistant", content: "Done." },
        { role: "user", content: "Next" },
      ],
    },
    pick: (sent) => (sent.contents as Obj[]).slice(1, 5),
    want: [
      {
        role: "model",
        parts: [{ functionCall: { name: "f", args: { x: "1" } }, thoughtSignature: "c2lnLTE=" }, {
          functionCall: { name: "g", args: {} },
        }],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "f", response: { output: "one" } } },
          { functionResponse: { name: "g", response: { error: "bad" } } },
        ],
      },
      { role: "model", parts: [{ functionCall: { name: "f", args: {} }, thoughtSignature: SKIP_SIGNATURE }] },
      { role: "user", parts: [{ functionResponse: { name: "f", response: { output: "three" } } }] },
    ],
  },
  {
    row: "tools: one tool of functionDeclarations, parameters rewritten; server tools dropped",
    request: {
      tools: [
        { ...TOOL, description: "F", input_schema: { ...TOOL.input_schema, additionalProperties: false } },
        { type: "web_search_20250305", name: "web_search", max_uses: 1 },
      ],
    },
    pick: (sent) => sent.tools,
    want: [{
      functionDeclarations: [{
        name: "f",
        parameters: { type: "OBJECT", properties: { x: { type: "STRING" } } },
        description: "F",
      }],
    }],
  },
  ...([
    [{ type: "auto" }, { mode: "AUTO" }],
    [{ type: "any" }, { mode: "ANY" }],
    [{ type: "tool", name: "f" }, { mode: "ANY", allowedFunctionNames: ["f"] }],
    [{ type: "none" }, { mode: "NONE" }],
  ] as const).map(([tool_choice, want]): Row => ({
    row: `tool_choice ${tool_choice.type}`,
    request: { tools: [TOOL], tool_choice },
    pick: (sent) => (sent.toolConfig as Obj).functionCallingConfig,
    want,
  })),
  {
    row: "max_tokens, capped at max_output_tokens",
    request: { max_tokens: 5000 },
    pick: config,
    want: { maxOutputTokens: 1000 },
  },
  {
    row: "temperature, top_p, top_k, stop_sequences",
    request: { max_tokens: 100, temperature: 0.3, top_p: 0.8, top_k: 20, stop_sequences: ["END"] },
    pick: config,
    want: { maxOutputTokens: 100, temperature: 0.3, topP: 0.8, topK: 20, stopSequences: ["END"] },
  },
  {
    row: "thinking enabled",
    request: { max_tokens: 900, thinking: { type: "enabled", budget_tokens: 512 } },
    pick: (sent) => (sent.generationConfig as Obj).thinkingConfig,
    want: { thinkingBudget: 512, includeThoughts: true },
  },
  {
    row: "thinking adaptive",
    request: { max_tokens: 900, thinking: { type: "adaptive" } },
    pick: (sent) => (sent.generationConfig as Obj).thinkingConfig,
    want: { thinkingBudget: -1, includeThoughts: true },
  },
];

for (const c of ROWS) {
  Deno.test(`Anthropic client -> Gemini upstream: ${c.row}`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set(
      "POST /gem/v1beta/models/gemini-test:generateContent",
      geminiResponder([{ parts: [{ text: "OK" }] }]),
    );
    const yaml = geminiUpstreamYaml(upstream.url);
    await using gw = await startGateway(upstream.url, {
      extraUpstreams: yaml.extraUpstreams.replace("    models:", "    max_output_tokens: 1000\n    models:"),
      extraGroups: yaml.extraGroups,
      env: { TEST_GEMINI_KEY: GEMINI_KEY },
    });
    const token = (await gw.store.createToken({ group: "gem" })).secret;
    const res = await gw.post("/v1/messages", { model: "gemini-test", max_tokens: 100, messages: [HI], ...c.request }, {
      "x-api-key": token,
    });
    assert.equal(res.status, 200, await readText(res));
    assert.deepEqual(c.pick(upstream.requests[0].body!), c.want);
  });
}

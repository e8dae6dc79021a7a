/**
 * @module Messages client -> Responses upstream: each row of docs/protocols.md's request table ("Anthropic Messages
 * client, Responses upstream"), and reasoning items carried in thinking blocks and put back.
 */
import assert from "node:assert/strict";
import { thoughtSignatureFor } from "../../src/translate/gemini_messages_request.ts";
import { messagesViaGemini } from "../../src/translate/messages_gemini_response.ts";
import { messagesViaResponses } from "../../src/translate/messages_responses_response.ts";
import { reasoningBlock, reasoningItemIn } from "../../src/translate/responses_reasoning.ts";
import { shortenToolName } from "../../src/translate/shared.ts";
import { pickTranslator, type TranslateContext } from "../../src/translate/mod.ts";
import type { MappingRow as Row, Obj } from "../_mapping_rows.ts";
import { testContext } from "../_translate_helpers.ts";

const HI = { role: "user", content: "Hi" };
const SCHEMA = { type: "object", properties: { path: { type: "string" } } };
const LONG_NAME = `mcp__filesystem_server__${"read_multiple_files_with_metadata_".repeat(2)}`;
const ITEM = {
  type: "reasoning",
  id: "rs_1",
  summary: [{ type: "summary_text", text: "Plan." }],
  encrypted_content: "ENC",
};

function translate(body: Obj, logs: Obj[] = [], upstream: Partial<TranslateContext> = {}) {
  const translation = messagesViaResponses({ ...testContext(logs), ...upstream });
  return translation.request({ model: "public-model", max_tokens: 100, messages: [HI], ...body });
}

const input = (sent: Obj) => sent.input;

const ROWS: Row[] = [
  {
    row: "system (string or blocks) -> instructions; a system message in messages stays in place",
    request: {
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }, {
        type: "text",
        text: "Be kind.",
      }],
      messages: [{ role: "system", content: "Context." }, HI],
    },
    pick: (sent) => [sent.instructions, sent.input],
    want: [
      "Be brief.\nBe kind.",
      [
        { type: "message", role: "system", content: [{ type: "input_text", text: "Context." }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "Hi" }] },
      ],
    ],
  },
  {
    row: "user text, images (base64, URL), documents (PDF, URL, text) -> input parts; file sources dropped",
    request: {
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Look" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
          {
            type: "document",
            title: "spec.pdf",
            source: { type: "base64", media_type: "application/pdf", data: "JVBE" },
          },
          { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
          { type: "document", source: { type: "text", media_type: "text/plain", data: "Notes" } },
          { type: "image", source: { type: "file", file_id: "file_1" } },
        ],
      }],
    },
    pick: input,
    want: [{
      type: "message",
      role: "user",
      content: [
        { type: "input_text", text: "Look" },
        { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "auto" },
        { type: "input_image", image_url: "https://example.com/cat.jpg", detail: "auto" },
        { type: "input_file", filename: "spec.pdf", file_data: "data:application/pdf;base64,JVBE" },
        { type: "input_file", file_url: "https://example.com/a.pdf" },
        { type: "input_text", text: "Notes" },
      ],
    }],
  },
  {
    row: "assistant text -> output_text messages; tool_use -> function_call; tool_result -> function_call_output first",
    request: {
      messages: [
        HI,
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            { type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "a" } },
            { type: "tool_use", id: "toolu_2", name: LONG_NAME, input: {} },
          ],
        },
        {
          role: "user",
          content: [
            { type: "text", text: "Also:" },
            { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "hi" }] },
            { type: "tool_result", tool_use_id: "toolu_2", content: "boom", is_error: true },
          ],
        },
      ],
    },
    pick: (sent) => (sent.input as Obj[]).slice(1),
    want: [
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
      { type: "function_call", call_id: "toolu_1", name: "read_file", arguments: '{"path":"a"}' },
      { type: "function_call", call_id: "toolu_2", name: shortenToolName(LONG_NAME), arguments: "{}" },
      { type: "function_call_output", call_id: "toolu_1", output: "hi" },
      { type: "function_call_output", call_id: "toolu_2", output: "Error: boom" },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Also:" }] },
    ],
  },
  {
    row: "a tool_result with images -> an output of input parts",
    request: {
      messages: [HI, { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "shot", input: {} }] }, {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "toolu_1",
          is_error: true,
          content: [
            { type: "text", text: "Screen:" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
          ],
        }],
      }],
    },
    pick: (sent) => (sent.input as Obj[]).at(-1),
    want: {
      type: "function_call_output",
      call_id: "toolu_1",
      output: [
        { type: "input_text", text: "Error:" },
        { type: "input_text", text: "Screen:" },
        { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "auto" },
      ],
    },
  },
  {
    row: "tools -> flat function tools, not strict; server tools dropped",
    request: {
      tools: [
        { name: "read_file", description: "Reads.", input_schema: SCHEMA },
        { type: "web_search_20250305", name: "web_search", max_uses: 1 },
      ],
    },
    pick: (sent) => sent.tools,
    want: [{ type: "function", name: "read_file", description: "Reads.", parameters: SCHEMA, strict: false }],
  },
  ...([
    [{ type: "auto" }, "auto"],
    [{ type: "any" }, "required"],
    [{ type: "tool", name: "read_file" }, { type: "function", name: "read_file" }],
    [{ type: "none" }, "none"],
  ] as const).map(([tool_choice, want]): Row => ({
    row: `tool_choice ${tool_choice.type}`,
    request: { tools: [{ name: "read_file", input_schema: SCHEMA }], tool_choice },
    pick: (sent) => sent.tool_choice,
    want,
  })),
  {
    row: "disable_parallel_tool_use -> parallel_tool_calls: false",
    request: {
      tools: [{ name: "read_file", input_schema: SCHEMA }],
      tool_choice: { type: "auto", disable_parallel_tool_use: true },
    },
    pick: (sent) => sent.parallel_tool_calls,
    want: false,
  },
  {
    row: "max_tokens -> max_output_tokens, capped at the upstream's max_output_tokens",
    request: { max_tokens: 32000 },
    pick: (sent) => sent.max_output_tokens,
    want: 1000,
  },
  {
    row: "thinking enabled -> reasoning with an effort from the budget and a summary; encrypted content included",
    request: { max_tokens: 32000, thinking: { type: "enabled", budget_tokens: 31999 }, temperature: 1 },
    pick: (sent) => [sent.reasoning, sent.include, sent.temperature],
    want: [{ effort: "high", summary: "auto" }, ["reasoning.encrypted_content"], undefined],
  },
  {
    row: "thinking adaptive -> medium, output_config.effort when it names one, no summary when display is omitted",
    request: { thinking: { type: "adaptive", display: "omitted" }, output_config: { effort: "low" } },
    pick: (sent) => sent.reasoning,
    want: { effort: "low" },
  },
  {
    row: "no thinking: no reasoning; temperature and top_p cross; top_k and stop_sequences dropped",
    request: { temperature: 0.3, top_p: 0.8, top_k: 20, stop_sequences: ["END"] },
    pick: (sent) => [sent.reasoning, sent.include, sent.temperature, sent.top_p, sent.top_k, sent.stop],
    want: [undefined, undefined, 0.3, 0.8, undefined, undefined],
  },
  {
    row: "metadata.user_id -> user, hashed when longer than 64 characters",
    request: { metadata: { user_id: JSON.stringify({ device_id: "d".repeat(64), session_id: "s".repeat(36) }) } },
    pick: (sent) => /^user_[0-9a-f]{40}$/.test(String(sent.user)),
    want: true,
  },
  {
    row: "store: false always; stream",
    request: { stream: true },
    pick: (sent) => [sent.store, sent.stream, sent.model],
    want: [false, true, "upstream-model"],
  },
];

for (const c of ROWS) {
  Deno.test(`Messages client -> Responses upstream: ${c.row}`, () => {
    assert.deepEqual(c.pick(translate(c.request, [], { maxOutputTokens: 1000 })), c.want);
  });
}

Deno.test("what cannot cross is logged: server tools, stop_sequences, a file image, another upstream's thinking", () => {
  const logs: Obj[] = [];
  translate({
    tools: [{ type: "web_search_20250305", name: "web_search" }],
    stop_sequences: ["END"],
    messages: [
      {
        role: "user",
        content: [{ type: "image", source: { type: "file", file_id: "f" } }, { type: "text", text: "x" }],
      },
      {
        role: "assistant",
        content: [{ type: "thinking", thinking: "t", signature: "anthropic-sig" }, { type: "text", text: "y" }],
      },
      HI,
    ],
  }, logs);
  assert.deepEqual(logs.map((l) => l.field).sort(), [
    "content.image",
    "messages[].content[]",
    "stop_sequences",
    "tools",
  ]);
  assert.ok(logs.every((l) => l.event === "translate_drop"));
});

Deno.test("a reasoning item rides in a thinking block's signature (or redacted data) and comes back whole, in place", () => {
  const thinking = reasoningBlock(ITEM)!;
  assert.equal(thinking.type, "thinking");
  assert.equal(thinking.thinking, "Plan.");
  const redacted = reasoningBlock({ ...ITEM, summary: [] })!;
  assert.equal(redacted.type, "redacted_thinking");
  assert.deepEqual(reasoningBlock({ ...ITEM, encrypted_content: null }), {
    type: "thinking",
    thinking: "Plan.",
    signature: "",
  });
  assert.equal(reasoningBlock({ ...ITEM, summary: [], encrypted_content: null }), undefined);
  const sent = translate({
    messages: [
      HI,
      {
        role: "assistant",
        content: [
          thinking,
          { type: "tool_use", id: "toolu_1", name: "read_file", input: {} },
          { type: "thinking", thinking: "Claude's own.", signature: "anthropic-sig" },
          { type: "redacted_thinking", data: "anthropic-data" },
          redacted,
          { type: "text", text: "Done." },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hi" }] },
    ],
  });
  assert.deepEqual((sent.input as Obj[]).slice(1, 5), [
    ITEM,
    { type: "function_call", call_id: "toolu_1", name: "read_file", arguments: "{}" },
    { ...ITEM, summary: [] },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] },
  ]);
});

Deno.test("a changed or foreign signature carries no reasoning item", () => {
  const block = reasoningBlock(ITEM)!;
  const signature = String(block.signature);
  assert.equal(reasoningItemIn({ ...block, signature: signature.slice(0, -8) }), undefined);
  assert.equal(
    reasoningItemIn({ ...block, signature: "modelgate-responses-reasoning.v2:" + signature.split(":")[1] }),
    undefined,
  );
  assert.equal(reasoningItemIn({ type: "text", text: signature }), undefined);
  assert.deepEqual(reasoningItemIn(block), ITEM);
});

Deno.test("a signature that carries a reasoning item without encrypted content is not sent back as reasoning", () => {
  const mark = String(reasoningBlock(ITEM)!.signature).split(":")[0] + ":";
  const carrying = (item: Obj) => mark + new TextEncoder().encode(JSON.stringify(item)).toBase64();
  const { encrypted_content: _, ...unsealed } = ITEM;
  const blocks = [
    { type: "thinking", thinking: "Plan.", signature: carrying({ ...ITEM, encrypted_content: "" }) },
    { type: "thinking", thinking: "Plan.", signature: carrying(unsealed) },
    { type: "redacted_thinking", data: carrying({ ...ITEM, encrypted_content: null }) },
    { type: "thinking", thinking: "Plan.", signature: carrying({ ...ITEM, id: "" }) },
  ];
  for (const block of blocks) assert.equal(reasoningItemIn(block), undefined, JSON.stringify(block).slice(0, 80));
  const sent = translate({
    messages: [HI, { role: "assistant", content: [...blocks, { type: "text", text: "Done." }] }, HI],
  });
  assert.deepEqual((sent.input as Obj[]).filter((item) => item.type === "reasoning"), []);
  assert.deepEqual((sent.input as Obj[])[1], {
    type: "message",
    role: "assistant",
    content: [{ type: "output_text", text: "Done." }],
  });
});

Deno.test("a refusal of reasoning another account made is resent once without the reasoning items", () => {
  const logs: Obj[] = [];
  const refusal = {
    status: 400,
    code: "invalid_encrypted_content",
    message: "The encrypted content for item rs_1 ...",
  };
  const history = [HI, { role: "assistant", content: [reasoningBlock(ITEM)!, { type: "text", text: "Yes?" }] }, HI];
  const send = () => {
    const translation = messagesViaResponses(testContext(logs));
    return { translation, sent: translation.request({ model: "m", max_tokens: 100, messages: history }) };
  };
  assert.equal(send().translation.recover!({ ...refusal, status: 500 }), undefined, "only a refusal of the request");
  assert.equal(send().translation.recover!({ ...refusal, code: "other", message: "x" }), undefined, "only about it");
  const { translation, sent } = send();
  assert.equal((sent.input as Obj[]).filter((i) => i.type === "reasoning").length, 1);
  const again = translation.recover!(refusal)!;
  assert.deepEqual(again.input, (sent.input as Obj[]).filter((i) => i.type !== "reasoning"));
  assert.equal(logs.at(-1)?.field, "input[]");
  assert.equal(translation.recover!(refusal), undefined, "once");
});

Deno.test("chat and Gemini clients reach the same second try through their Messages translation", () => {
  const refusal = {
    status: 400,
    code: "invalid_encrypted_content",
    message: "The encrypted content for item rs_1 ...",
  };
  const thought = thoughtSignatureFor(reasoningBlock(ITEM)!);
  const gemini = pickTranslator("gemini", "openai-responses")!(testContext());
  const sent = gemini.request({
    model: "m",
    contents: [
      { role: "user", parts: [{ text: "Hi" }] },
      { role: "model", parts: [{ text: "Plan.", thought: true, thoughtSignature: thought }, { text: "Yes?" }] },
      { role: "user", parts: [{ text: "More" }] },
    ],
  });
  assert.deepEqual((sent.input as Obj[])[1], ITEM);
  assert.deepEqual(gemini.recover!(refusal)!.input, (sent.input as Obj[]).filter((i) => i.type !== "reasoning"));
  const chat = pickTranslator("openai-chat", "openai-responses")!(testContext());
  chat.request({ model: "m", messages: [{ role: "user", content: "Hi" }] });
  assert.equal(chat.recover!(refusal), undefined, "nothing to leave out");
});

Deno.test("a block that carries a reasoning item never reaches a Gemini upstream", () => {
  const sent = messagesViaGemini(testContext()).request({
    model: "m",
    max_tokens: 100,
    messages: [HI, { role: "assistant", content: [reasoningBlock(ITEM)!, { type: "text", text: "Yes?" }] }, HI],
  });
  assert.deepEqual(sent.contents, [
    { role: "user", parts: [{ text: "Hi" }] },
    { role: "model", parts: [{ text: "Yes?" }] },
    { role: "user", parts: [{ text: "Hi" }] },
  ]);
});

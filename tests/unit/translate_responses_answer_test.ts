/**
 * @module Responses upstream -> Messages client: the answer's rows of docs/protocols.md ("Anthropic Messages client,
 * Responses upstream"): items to blocks, stop reasons, usage, tool names back; and the stream's own rules (the
 * reasoning item's signature just before its block stops, one block open at a time, a cut stream is an error).
 */
import assert from "node:assert/strict";
import { SseParser } from "../../src/core/sse.ts";
import { translateSse } from "../../src/relay/stream.ts";
import { messagesViaResponses } from "../../src/translate/messages_responses_response.ts";
import { reasoningItemIn } from "../../src/translate/responses_reasoning.ts";
import { shortenToolName } from "../../src/translate/shared.ts";
import { readAnthropicJson, readAnthropicStream } from "../_client_readers.ts";
import { responsesAnswer } from "../_fake_responses_events.ts";
import type { Obj } from "../_mapping_rows.ts";
import { sse } from "../_scripted_model.ts";
import { testContext } from "../_translate_helpers.ts";

const LONG_NAME = `mcp__filesystem_server__${"read_multiple_files_with_metadata_".repeat(2)}`;
const SCHEMA = { type: "object", properties: {} };
const REQUEST = {
  model: "public-model",
  max_tokens: 1000,
  messages: [{ role: "user", content: "Read notes.txt" }],
  tools: [{ name: "read_file", input_schema: SCHEMA }, { name: LONG_NAME, input_schema: SCHEMA }],
  thinking: { type: "enabled", budget_tokens: 2048 },
};
const USAGE = {
  input_tokens: 100,
  input_tokens_details: { cached_tokens: 80 },
  output_tokens: 30,
  output_tokens_details: { reasoning_tokens: 12 },
  total_tokens: 130,
};
const REASONING = {
  type: "reasoning",
  id: "rs_1",
  summary: [{ type: "summary_text", text: "First." }, { type: "summary_text", text: "Second." }],
  encrypted_content: "ENC",
};
const message = (text: string, type = "output_text") => ({
  type: "message",
  id: "msg_1",
  role: "assistant",
  content: [type === "refusal" ? { type, refusal: text } : { type, text, annotations: [] }],
});
const call = (name: string, args: string) => ({
  type: "function_call",
  id: "fc_1",
  call_id: "call_1",
  name,
  arguments: args,
});

function whole(response: Obj, request: Obj = REQUEST) {
  const translation = messagesViaResponses(testContext());
  translation.request(request);
  return translation.response({ id: "resp_1", status: "completed", usage: USAGE, ...response });
}

/** The Anthropic events for a Responses event stream, through the relay's real SSE pipeline. */
async function streamed(events: Obj[], request: Obj = REQUEST) {
  const translation = messagesViaResponses(testContext());
  translation.request({ ...request, stream: true });
  const body = sse(events, true).body!;
  return new SseParser().push(await new Response(translateSse(body, translation.stream!(), "anthropic")).text());
}

/** The fake provider's own events for a request (its script: a call to read_file, reasoning first). */
function providerEvents(request: Obj) {
  return responsesAnswer(request, { id: "resp_9", secret: "s", script: [{ tool: "read_file", args: { path: "n" } }] });
}

const STOPS: [string, Obj, string][] = [
  ["completed", { output: [message("Hi")] }, "end_turn"],
  ["completed with a call", { output: [call("read_file", "{}")] }, "tool_use"],
  ["a refusal part", { output: [message("No.", "refusal")] }, "refusal"],
  ["incomplete, max_output_tokens", {
    status: "incomplete",
    incomplete_details: { reason: "max_output_tokens" },
    output: [call("read_file", '{"pa')],
  }, "max_tokens"],
  ["incomplete, content_filter", {
    status: "incomplete",
    incomplete_details: { reason: "content_filter" },
    output: [message("Hm")],
  }, "refusal"],
];

for (const [row, response, stop] of STOPS) {
  Deno.test(`Responses upstream -> Messages client: stop reason of ${row} is ${stop}`, async () => {
    assert.equal(whole(response).stop_reason, stop);
    const events = [
      { type: "response.created", response: { id: "resp_1", status: "in_progress", output: [] } },
      ...(response.output as Obj[]).map((item, output_index) => ({
        type: "response.output_item.done",
        output_index,
        item,
      })),
      {
        type: `response.${response.status ?? "completed"}`,
        response: { id: "resp_1", status: "completed", usage: USAGE, ...response },
      },
    ];
    const delta = (await streamed(events)).find((e) => e.event === "message_delta")!;
    assert.equal(JSON.parse(delta.data).delta.stop_reason, stop);
  });
}

Deno.test("usage: cached input apart from input, reasoning inside output", () => {
  assert.deepEqual(whole({ output: [message("Hi")] }).usage, {
    input_tokens: 20,
    output_tokens: 30,
    cache_read_input_tokens: 80,
    cache_creation_input_tokens: 0,
  });
});

Deno.test("items in order: reasoning as signed thinking (parts as paragraphs), text, calls under the client's names", () => {
  const body = whole({ output: [REASONING, message("Checking."), call(shortenToolName(LONG_NAME), '{"a":1}')] });
  const content = body.content as Obj[];
  assert.deepEqual(content.map((b) => b.type), ["thinking", "text", "tool_use"]);
  assert.equal(content[0].thinking, "First.\n\nSecond.");
  assert.deepEqual(reasoningItemIn(content[0]), REASONING);
  assert.deepEqual(content[2], { type: "tool_use", id: "call_1", name: LONG_NAME, input: { a: 1 } });
  assert.equal(readAnthropicJson(body).stop, "tool");
  assert.equal(body.id, "resp_1");
  assert.equal(body.model, "public-model");
});

Deno.test("a stream: signature_delta just before the thinking block stops, then text, then the call whole", async () => {
  const { events, response } = providerEvents({
    ...REQUEST,
    input: [],
    tools: [{ type: "function", name: "read_file" }],
    reasoning: { effort: "low", summary: "auto" },
    include: ["reasoning.encrypted_content"],
  });
  const out = await streamed(events);
  const summary = readAnthropicStream(out);
  assert.equal(summary.reasoning, "Thinking about step 0.");
  assert.deepEqual(summary.tools, [{ id: "call_0", name: "read_file", args: { path: "n" } }]);
  assert.equal(summary.stop, "tool");
  const types = out.map((e) => {
    const data = JSON.parse(e.data);
    return data.delta?.type ?? data.type;
  });
  assert.deepEqual(types.slice(0, 6), [
    "message_start",
    "content_block_start",
    "thinking_delta",
    "thinking_delta",
    "signature_delta",
    "content_block_stop",
  ]);
  assert.deepEqual(reasoningItemIn({ type: "thinking", signature: summary.sealed[0] }), response.output[0]);
});

Deno.test("a stream: reasoning without a summary comes as a redacted_thinking block that carries it", async () => {
  const { events, response } = providerEvents({
    ...REQUEST,
    input: [],
    tools: [{ type: "function", name: "read_file" }],
    reasoning: { effort: "low" },
    include: ["reasoning.encrypted_content"],
  });
  const out = await streamed(events);
  const first = JSON.parse(out[1].data);
  assert.equal(first.content_block.type, "redacted_thinking");
  assert.deepEqual(JSON.parse(out[2].data), { type: "content_block_stop", index: 0 });
  assert.deepEqual(reasoningItemIn(first.content_block), response.output[0]);
  assert.equal(readAnthropicStream(out).sealed.length, 1);
});

Deno.test("a stream: reasoning whose summary block another item's text closed still goes back, in a redacted block", async () => {
  const events = [
    { type: "response.created", response: { id: "resp_1", status: "in_progress", output: [] } },
    { type: "response.output_item.added", output_index: 0, item: { type: "reasoning", id: "rs_1", summary: [] } },
    { type: "response.reasoning_summary_text.delta", output_index: 0, summary_index: 0, delta: "First." },
    // The message's text starts before the reasoning item is done: its thinking block is closed without a signature.
    { type: "response.output_item.added", output_index: 1, item: { type: "message", content: [] } },
    { type: "response.output_text.delta", output_index: 1, content_index: 0, delta: "Hi" },
    { type: "response.output_item.done", output_index: 0, item: REASONING },
    { type: "response.output_item.done", output_index: 1, item: message("Hi") },
    { type: "response.completed", response: { id: "resp_1", status: "completed", usage: USAGE } },
  ];
  const out = await streamed(events);
  const summary = readAnthropicStream(out);
  assert.equal(summary.reasoning, "First.");
  assert.equal(summary.text, "Hi");
  assert.equal(summary.sealed.length, 1, "the reasoning item goes back once");
  const starts = out.map((e) => JSON.parse(e.data)).filter((d) => d.type === "content_block_start");
  assert.deepEqual(starts.map((d) => d.content_block.type), ["thinking", "text", "redacted_thinking"]);
  assert.deepEqual(reasoningItemIn(starts[2].content_block), REASONING);
});

Deno.test("a stream: a message whose text came without deltas is shown from its finished item; [DONE] is ignored", async () => {
  const events = [
    { type: "response.created", response: { id: "resp_1" } },
    { type: "response.output_item.added", output_index: 0, item: { type: "message", content: [] } },
    { type: "response.output_item.done", output_index: 0, item: message("Whole.") },
    { type: "response.completed", response: { id: "resp_1", status: "completed", usage: USAGE } },
  ];
  const out = await streamed(events);
  assert.equal(readAnthropicStream([...out]).text, "Whole.");
  const withDone = [...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"].join("");
  const translation = messagesViaResponses(testContext());
  translation.request({ ...REQUEST, stream: true });
  const text = await new Response(
    translateSse(ReadableStream.from([new TextEncoder().encode(withDone)]), translation.stream!(), "anthropic"),
  ).text();
  assert.equal(readAnthropicStream(new SseParser().push(text)).text, "Whole.");
});

Deno.test("a stream cut before response.completed, or failed, ends in an error event, never message_stop", async () => {
  const { events } = providerEvents({ ...REQUEST, input: [], tools: [{ type: "function", name: "read_file" }] });
  for (
    const [name, tail] of [
      ["cut", []],
      ["failed", [{
        type: "response.failed",
        response: { id: "resp_9", status: "failed", error: { code: "server_error", message: "Boom" } },
      }]],
    ] as const
  ) {
    const out = await streamed([...events.slice(0, -1), ...tail]);
    const summary = readAnthropicStream(out);
    assert.ok(summary.error, name);
    assert.ok(!out.some((e) => e.event === "message_stop"), name);
  }
});

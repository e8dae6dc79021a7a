/**
 * @module Strict readers of what each client protocol receives: they enforce the stream rules the real SDKs,
 * Claude Code and Codex rely on (see docs/protocols.md: "Anthropic streams", "Chat Completions
 * streams", "Responses streams") and reduce an answer to a protocol-neutral summary. The Responses readers are in
 * _responses_reader.ts.
 */
import assert from "node:assert/strict";
import type { SseMessage } from "../src/core/sse.ts";

/** What an answer says, whatever protocol carried it. */
export interface Summary {
  text: string;
  reasoning: string;
  tools: { id: string; name: string; args: unknown }[];
  stop?: "end" | "length" | "tool" | "filter";
  /** `input` counts every prompt token, cached ones included. */
  usage?: { input: number; output: number; cached: number };
  /** Opaque reasoning state handed back to the client (Responses `encrypted_content`, Anthropic signatures). */
  sealed: string[];
  error?: string;
}

type Obj = Record<string, unknown>;

/** A summary of nothing yet, for a reader to fill. */
export function emptySummary(): Summary {
  return { text: "", reasoning: "", tools: [], sealed: [] };
}

const ANTHROPIC_STOP: Record<string, Summary["stop"]> = {
  end_turn: "end",
  stop_sequence: "end",
  max_tokens: "length",
  tool_use: "tool",
  refusal: "filter",
};
const CHAT_STOP: Record<string, Summary["stop"]> = {
  stop: "end",
  length: "length",
  tool_calls: "tool",
  content_filter: "filter",
};

function anthropicUsage(u: Obj): Summary["usage"] {
  const input = Number(u.input_tokens) + Number(u.cache_read_input_tokens ?? 0) +
    Number(u.cache_creation_input_tokens ?? 0);
  return { input, output: Number(u.output_tokens), cached: Number(u.cache_read_input_tokens ?? 0) };
}

/** Reads an Anthropic event stream, asserting message_start first, one block open at a time and a clean end. */
export function readAnthropicStream(events: SseMessage[]): Summary {
  const out = emptySummary();
  const blocks: Obj[] = [];
  const json: string[] = [];
  let open: number | undefined;
  let phase = "before" as "before" | "message" | "delta" | "stopped" | "error";
  let usage: Obj = {};
  for (const e of events) {
    assert.notEqual(phase, "stopped", "event after message_stop");
    assert.notEqual(phase, "error", "event after error");
    const data = JSON.parse(e.data) as Obj;
    assert.equal(e.event, data.type, "event name matches type");
    if (data.type === "ping") continue;
    if (data.type === "error") {
      out.error = String((data.error as Obj).message);
      phase = "error";
      continue;
    }
    if (data.type === "message_start") {
      assert.equal(phase, "before");
      const message = data.message as Obj;
      assert.deepEqual(message.content, []);
      assert.equal(typeof (message.usage as Obj).input_tokens, "number");
      usage = { ...(message.usage as Obj) };
      phase = "message";
      continue;
    }
    assert.equal(phase === "message" || phase === "delta", true, `${data.type} outside a message`);
    if (data.type === "content_block_start") {
      assert.equal(open, undefined, "a block is already open");
      assert.equal(data.index, blocks.length, "block indices count up from 0");
      blocks.push({ ...(data.content_block as Obj) });
      json.push("");
      open = data.index as number;
    } else if (data.type === "content_block_delta") {
      assert.equal(data.index, open, "delta for the open block");
      const block = blocks[open!];
      const delta = data.delta as Obj;
      if (delta.type === "text_delta") block.text = String(block.text) + delta.text;
      else if (delta.type === "thinking_delta") block.thinking = String(block.thinking) + delta.thinking;
      else if (delta.type === "signature_delta") block.signature = String(block.signature ?? "") + delta.signature;
      else if (delta.type === "input_json_delta") json[open!] += delta.partial_json;
      else assert.fail(`unknown delta ${delta.type}`);
      const expected = { text_delta: "text", thinking_delta: "thinking", signature_delta: "thinking" } as Obj;
      if (delta.type !== "input_json_delta") assert.equal(block.type, expected[String(delta.type)]);
      else assert.equal(block.type, "tool_use");
    } else if (data.type === "content_block_stop") {
      assert.equal(data.index, open, "stop for the open block");
      open = undefined;
    } else if (data.type === "message_delta") {
      assert.equal(open, undefined, "message_delta with a block open");
      const u = data.usage as Obj;
      assert.equal(typeof u.output_tokens, "number", "message_delta carries usage.output_tokens");
      usage = { ...usage, ...u };
      out.stop = ANTHROPIC_STOP[String((data.delta as Obj).stop_reason)];
      assert.ok(out.stop, "message_delta has a known stop_reason");
      phase = "delta";
    } else if (data.type === "message_stop") {
      assert.equal(phase, "delta", "message_stop after message_delta");
      phase = "stopped";
    }
  }
  if (phase !== "error") assert.equal(phase, "stopped", "stream ends with message_stop");
  blocks.forEach((block, i) => {
    if (block.type === "tool_use") block.input = json[i] === "" ? {} : JSON.parse(json[i]);
  });
  addAnthropicBlocks(out, blocks);
  if (phase === "stopped") out.usage = anthropicUsage(usage);
  return out;
}

function addAnthropicBlocks(out: Summary, blocks: Obj[]): void {
  for (const block of blocks) {
    if (block.type === "text") {
      assert.notEqual(block.text, "", "no empty text blocks");
      out.text += block.text;
    } else if (block.type === "thinking") {
      out.reasoning += block.thinking;
      if (block.signature) out.sealed.push(String(block.signature));
    } else if (block.type === "redacted_thinking") {
      out.sealed.push(String(block.data));
    } else if (block.type === "tool_use") {
      assert.match(String(block.id), /^[a-zA-Z0-9_-]+$/);
      out.tools.push({ id: String(block.id), name: String(block.name), args: block.input });
    }
  }
}

/** Reads an Anthropic message body. */
export function readAnthropicJson(body: Obj): Summary {
  const out = emptySummary();
  assert.equal(body.type, "message");
  addAnthropicBlocks(out, body.content as Obj[]);
  out.stop = ANTHROPIC_STOP[String(body.stop_reason)];
  out.usage = anthropicUsage(body.usage as Obj);
  return out;
}

function chatUsage(u: Obj): Summary["usage"] {
  const details = (u.prompt_tokens_details ?? {}) as Obj;
  return {
    input: Number(u.prompt_tokens),
    output: Number(u.completion_tokens),
    cached: Number(details.cached_tokens ?? 0),
  };
}

/** Reads chat chunks, asserting stable tool-call ids and names, one finish, usage after it and `[DONE]` last. */
export function readChatStream(events: SseMessage[]): Summary {
  const out = emptySummary();
  const calls: { id: string; name: string; args: string }[] = [];
  let done = false;
  let first = true;
  for (const e of events) {
    assert.ok(!done && out.error === undefined, "event after the end");
    assert.equal(e.event, undefined, "chat chunks have no event name");
    if (e.data === "[DONE]") {
      done = true;
      continue;
    }
    const chunk = JSON.parse(e.data) as Obj;
    if (chunk.error) {
      out.error = String((chunk.error as Obj).message);
      continue;
    }
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) out.usage = chatUsage(chunk.usage as Obj);
    const choice = (chunk.choices as Obj[])[0];
    if (!choice) continue;
    const delta = choice.delta as Obj;
    if (first) assert.equal(delta.role, "assistant", "the first delta carries the role");
    first = false;
    if (typeof delta.content === "string") out.text += delta.content;
    if (typeof delta.reasoning_content === "string") out.reasoning += delta.reasoning_content;
    for (const tc of (delta.tool_calls ?? []) as Obj[]) {
      const fn = (tc.function ?? {}) as Obj;
      const k = tc.index as number;
      if (!calls[k]) {
        assert.equal(k, calls.length, "tool call indices count tool calls from 0");
        assert.equal(tc.type, "function");
        assert.ok(tc.id && fn.name, "a tool call starts with its id and name");
        calls[k] = { id: String(tc.id), name: String(fn.name), args: "" };
      } else assert.ok(tc.id === undefined && fn.name === undefined, "id and name do not change");
      calls[k].args += fn.arguments ?? "";
    }
    if (choice.finish_reason) {
      assert.equal(out.stop, undefined, "one finish_reason");
      out.stop = CHAT_STOP[String(choice.finish_reason)];
    }
  }
  if (out.error === undefined) assert.ok(done && out.stop, "stream ends with a finish_reason and [DONE]");
  for (const c of calls) out.tools.push({ id: c.id, name: c.name, args: JSON.parse(c.args || "{}") });
  return out;
}

/** Reads a chat completion body. */
export function readChatJson(body: Obj): Summary {
  const out = emptySummary();
  assert.equal(body.object, "chat.completion");
  const choice = (body.choices as Obj[])[0];
  const message = choice.message as Obj;
  out.text = String(message.content ?? "");
  out.reasoning = String(message.reasoning_content ?? "");
  for (const tc of (message.tool_calls ?? []) as Obj[]) {
    const fn = tc.function as Obj;
    out.tools.push({ id: String(tc.id), name: String(fn.name), args: JSON.parse(String(fn.arguments)) });
  }
  out.stop = CHAT_STOP[String(choice.finish_reason)];
  out.usage = chatUsage(body.usage as Obj);
  return out;
}

/**
 * @module Compaction in Responses terms, made by the gateway (see docs/protocols.md, "Compaction"): the trigger and
 * threshold a request asks with, the summary request built from a conversation, the `compaction` item that carries
 * the summary, and the message that stands in its place when a later request brings the item back. Pure.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { invalidField } from "../core/validation.ts";

/**
 * What the model is asked, as the instructions of the summary request. The transcript follows as the one user
 * message. The summary replaces everything before it, so it must let the work go on without the transcript.
 */
export const COMPACTION_INSTRUCTIONS = [
  "You are compacting a conversation between a user and an AI assistant that may use tools, so that the work can",
  "continue in a fresh context that holds only your summary. The transcript follows. Write the summary that the",
  "assistant will read in place of the conversation. Keep:",
  "- the user's requests and constraints, the latest request word for word;",
  "- what has been done so far: decisions, files read or changed (with paths), commands run and what they showed;",
  "- facts found that the work depends on (names, values, errors, results), stated exactly;",
  "- what is still open, and the next step the assistant was about to take.",
  "Drop greetings, repetition and tool output that no longer matters. Do not call tools. Do not answer the user or",
  "continue the work: write only the summary, in plain text, from the assistant's point of view.",
].join("\n");

/** What the summary is introduced with when it stands in for the conversation it replaced. */
export const SUMMARY_HEADER =
  "Summary of the conversation so far (the earlier turns were compacted; continue the work from here):";

/** Characters of one item kept in the transcript: a long tool output keeps its start and its end. */
export const TRANSCRIPT_ITEM_CHARS = 4000;

/** The index of the `compaction_trigger` item, which must be the last input item; undefined without one. */
export function triggerIndex(items: readonly JsonObject[], offset = 0): number | undefined {
  const at = items.findIndex((item) => item.type === "compaction_trigger");
  if (at === -1) return undefined;
  if (at !== items.length - 1) {
    throw invalidField(`input[${at + offset}]`, "compaction_trigger must be the last input item");
  }
  return at;
}

/** The index of the last `compaction` item, whose summary stands for everything before it; -1 without one. */
export function latestCompaction(items: readonly JsonObject[]): number {
  return items.findLastIndex((item) => item.type === "compaction");
}

/**
 * The `compact_threshold` of a request's `context_management` (an array of `{type: "compaction", compact_threshold}`),
 * or undefined when it asks for no compaction; anything else is a 400 naming the field.
 */
export function compactThreshold(body: JsonObject): number | undefined {
  const value = body.context_management;
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalidField("context_management", "must be an array");
  let threshold: number | undefined;
  value.forEach((entry, i) => {
    if (!isObject(entry) || entry.type !== "compaction") {
      throw invalidField(`context_management[${i}].type`, 'must be "compaction"');
    }
    const t = entry.compact_threshold;
    if (t === undefined || t === null) return;
    if (typeof t !== "number" || !Number.isInteger(t) || t < 1) {
      throw invalidField(`context_management[${i}].compact_threshold`, "must be a positive integer");
    }
    threshold = t;
  });
  return threshold;
}

/**
 * The conversation as plain text, one block per item, for the model to summarize. Instructions (system and developer
 * messages) are left out: they stay in force after the compaction as they are, and every request brings its own
 * `instructions`, so summarizing them would only cost tokens.
 */
export function transcript(items: readonly JsonObject[]): string {
  const blocks: string[] = [];
  for (const item of items) {
    const block = itemText(item);
    if (block) blocks.push(block);
  }
  return blocks.join("\n\n");
}

function itemText(item: JsonObject): string | undefined {
  switch (item.type) {
    case "message":
      if (item.role === "system" || item.role === "developer") return undefined;
      return `[${String(item.role ?? "user")}]\n${clip(contentText(item.content))}`;
    case "function_call":
      return `[tool call ${String(item.name)} ${String(item.call_id ?? "")}]\n${clip(String(item.arguments ?? ""))}`;
    case "custom_tool_call":
      return `[tool call ${String(item.name)} ${String(item.call_id ?? "")}]\n${clip(String(item.input ?? ""))}`;
    case "function_call_output":
    case "custom_tool_call_output":
      return `[tool output ${String(item.call_id ?? "")}]\n${clip(contentText(item.output))}`;
    case "reasoning": {
      const summary = Array.isArray(item.summary) ? item.summary.filter(isObject).map((p) => p.text).join("\n") : "";
      return summary ? `[assistant reasoning]\n${clip(summary)}` : undefined;
    }
    default:
      // Sealed state (encrypted reasoning, the gateway's own expanded summaries are messages) has no text to keep.
      return undefined;
  }
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content === undefined ? "" : JSON.stringify(content);
  return content.filter(isObject).map((part) =>
    typeof part.text === "string" ? part.text : part.type === "input_image" ? "[image]" : `[${String(part.type)}]`
  ).join("\n");
}

function clip(text: string): string {
  if (text.length <= TRANSCRIPT_ITEM_CHARS) return text;
  const half = TRANSCRIPT_ITEM_CHARS / 2;
  return `${text.slice(0, half)}\n[... ${text.length - TRANSCRIPT_ITEM_CHARS} characters left out ...]\n${
    text.slice(-half)
  }`;
}

/** The Responses request that asks the model for the summary of `items`: no tools, nothing stored, not streamed. */
export function summaryRequest(body: JsonObject, items: readonly JsonObject[]): JsonObject {
  return {
    model: body.model,
    instructions: COMPACTION_INSTRUCTIONS,
    input: [{ type: "message", role: "user", content: transcript(items) }],
    store: false,
    stream: false,
  };
}

/** The text of a Responses answer's messages: the summary the model wrote. */
export function answerText(answer: JsonObject): string {
  const output = Array.isArray(answer.output) ? answer.output.filter(isObject) : [];
  return output.filter((item) => item.type === "message").map((item) => contentText(item.content)).join("\n").trim();
}

/** The sealed payload: versioned, so a later gateway can tell what it opens. Holds the summary only. */
export function packSummary(summary: string): string {
  return JSON.stringify({ v: 1, summary });
}

/** The summary of an opened payload, or undefined when it is not one this gateway wrote. */
export function unpackSummary(text: string): string | undefined {
  try {
    const value = JSON.parse(text);
    return isObject(value) && value.v === 1 && typeof value.summary === "string" ? value.summary : undefined;
  } catch {
    return undefined;
  }
}

/** A `compaction` output item. */
export function compactionItem(id: string, encrypted: string): JsonObject {
  return { type: "compaction", id, encrypted_content: encrypted };
}

/** The message that stands in for a compaction item (and for everything before it) in the upstream request. */
export function summaryMessage(summary: string): JsonObject {
  return { type: "message", role: "user", content: `${SUMMARY_HEADER}\n\n${summary}` };
}

/**
 * @module A Responses API reasoning item carried in an Anthropic thinking block (see docs/protocols.md, "Anthropic
 * Messages client, Responses upstream"): the item (id, summary, encrypted content) rides in the block's `signature`,
 * or in a `redacted_thinking` block's `data` when it has no summary to show, so a Messages client hands the provider
 * back its own reasoning on the next turn. Only that provider can read it; every other upstream leaves it out.
 */
import { isObject, type JsonObject } from "../core/types.ts";

/** Marks (and versions) a signature or data that holds a reasoning item. */
const REASONING_MARK = "modelgate-responses-reasoning.v1:";

/** The text a reasoning item shows: its summary parts (or, from models that send it, its reasoning text). */
export function reasoningText(item: JsonObject): string {
  const texts = (parts: unknown) =>
    (Array.isArray(parts) ? parts : []).filter((p) => isObject(p) && typeof p.text === "string" && p.text)
      .map((p) => (p as JsonObject).text as string);
  const summary = texts(item.summary);
  return (summary.length > 0 ? summary : texts(item.content)).join("\n\n");
}

/** True when the item can go back to its provider: it has an id and the provider's encrypted content. */
function sealed(item: JsonObject): boolean {
  return typeof item.id === "string" && item.id !== "" && typeof item.encrypted_content === "string" &&
    item.encrypted_content !== "";
}

/** The signature that carries `item`: its id, summary and encrypted content, base64 behind the mark. */
function reasoningSignature(item: JsonObject): string {
  const kept = {
    id: item.id,
    summary: Array.isArray(item.summary) ? item.summary : [],
    encrypted_content: item.encrypted_content,
  };
  return REASONING_MARK + new TextEncoder().encode(JSON.stringify(kept)).toBase64();
}

/**
 * The Anthropic block for a reasoning item: thinking (its summary) signed with the item, `redacted_thinking` carrying
 * it when there is no summary, thinking with an empty signature when the provider gave nothing to send back, and
 * nothing when the item has neither text nor content.
 */
export function reasoningBlock(item: JsonObject): JsonObject | undefined {
  const text = reasoningText(item);
  if (!sealed(item)) return text ? { type: "thinking", thinking: text, signature: "" } : undefined;
  const signature = reasoningSignature(item);
  return text ? { type: "thinking", thinking: text, signature } : { type: "redacted_thinking", data: signature };
}

/** True when `block` is a thinking or redacted_thinking block that carries a reasoning item. */
export function carriesReasoning(block: unknown): boolean {
  if (!isObject(block)) return false;
  const carried = block.type === "thinking" ? block.signature : block.type === "redacted_thinking" ? block.data : "";
  return typeof carried === "string" && carried.startsWith(REASONING_MARK);
}

/** The reasoning item a block from {@linkcode reasoningBlock} carries, as an input item; undefined for any other. */
export function reasoningItemIn(block: unknown): JsonObject | undefined {
  if (!carriesReasoning(block)) return undefined;
  const { type, signature, data } = block as JsonObject;
  const carried = String(type === "thinking" ? signature : data).slice(REASONING_MARK.length);
  try {
    const item = JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(carried)));
    if (!isObject(item) || !sealed(item)) return undefined;
    const summary = Array.isArray(item.summary) ? item.summary : [];
    return { type: "reasoning", id: item.id, summary, encrypted_content: item.encrypted_content };
  } catch {
    return undefined;
  }
}

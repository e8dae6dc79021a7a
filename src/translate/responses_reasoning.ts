/**
 * @module Reasoning as it crosses protocols and deployments. A Responses API reasoning item carried in an Anthropic
 * thinking block (see docs/protocols.md, "Anthropic Messages client, Responses upstream"): the item (id, summary,
 * encrypted content) rides in the block's `signature`, or in a `redacted_thinking` block's `data` when it has no
 * summary to show, so a Messages client hands the provider back its own reasoning on the next turn; only that provider
 * can read it, every other upstream leaves it out. An Anthropic thinking block sealed the other way, in a reasoning
 * item's `encrypted_content`, for a Responses client. And the one second try without reasoning items that a turn
 * landing on another deployment after a failover is refused over (see docs/protocols.md, "Reasoning across
 * deployments").
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { logDrop, type Refusal, type TranslateContext } from "./identity.ts";

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

const SEAL = "modelgate.thinking.v1:";

/** Seals an Anthropic thinking or redacted_thinking block into an opaque `encrypted_content` string. */
export function sealThinking(block: JsonObject): string {
  const bytes = new TextEncoder().encode(JSON.stringify(block));
  return SEAL + btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
}

/** The thinking block sealed by {@linkcode sealThinking}, or undefined for anything else. */
export function unsealThinking(encrypted: unknown): JsonObject | undefined {
  if (typeof encrypted !== "string" || !encrypted.startsWith(SEAL)) return undefined;
  try {
    const binary = atob(encrypted.slice(SEAL.length));
    const block = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
    return isObject(block) && (block.type === "thinking" || block.type === "redacted_thinking") ? block : undefined;
  } catch {
    return undefined;
  }
}

/** The id of the item a refusal names: "The encrypted content for item rs_1 ..." or "Item with id 'rs_1' not found". */
const NAMED_ITEM = /(?:for item |Item with id ')([A-Za-z0-9_-]{1,200})/;

/**
 * The request without its reasoning items, when `refusal` is the provider saying it cannot read one of them (its
 * `encrypted_content` is another account's, or it names an item stored elsewhere); else undefined.
 */
export function withoutForeignReasoning(body: JsonObject, refusal: Refusal): JsonObject | undefined {
  if (refusal.status !== 400 && refusal.status !== 404) return undefined;
  if (!Array.isArray(body.input)) return undefined;
  const reasoning = body.input.filter((item) => isObject(item) && item.type === "reasoning");
  if (reasoning.length === 0) return undefined;
  const named = NAMED_ITEM.exec(refusal.message)?.[1];
  const about = named !== undefined
    ? reasoning.some((item) => (item as JsonObject).id === named)
    : refusal.code === "invalid_encrypted_content";
  if (!about) return undefined;
  return { ...body, input: body.input.filter((item) => !reasoning.includes(item)) };
}

/** The last request a translation sent, and its one second try without reasoning the deployment cannot read. */
export interface ReasoningRecovery {
  /** Notes `body` as the request sent, and returns it. */
  sent(body: JsonObject): JsonObject;
  /** The request once more without its reasoning items, when `refusal` is about them; only once per request. */
  recover(refusal: Refusal): JsonObject | undefined;
}

/** A recovery for one request's translation. */
export function reasoningRecovery(ctx: TranslateContext): ReasoningRecovery {
  let last: JsonObject | undefined;
  return {
    sent(body) {
      last = body;
      return body;
    },
    recover(refusal) {
      const again = last && withoutForeignReasoning(last, refusal);
      if (again) logDrop(ctx, { field: "input[]", type: "reasoning", reason: "the deployment cannot read it" });
      last = undefined;
      return again;
    },
  };
}

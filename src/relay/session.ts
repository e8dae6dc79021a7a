/**
 * @module What identifies a request's session for prompt-cache affinity, and how long the cache it protects lives:
 * Claude Code's session header, the Responses answer it continues, OpenAI's `prompt_cache_key`, or else a hash of the
 * head of its cacheable prompt. Pure: it reads the request and nothing else.
 */
import { saneId } from "../core/http.ts";
import { isObject, type JsonObject, type Protocol } from "../core/types.ts";

/** Where a session's identity came from, strongest first. */
export type SessionKind = "session" | "response" | "cache_key" | "prefix";

/** One session's identity within a token's use of one model. */
export interface SessionId {
  kind: SessionKind;
  id: string;
}

/** What the pins need of a request: whose it is, which session, and where its own answer may be continued. */
export interface SessionAffinity {
  token: string;
  model: string;
  /** The session the request belongs to: looked up before the choice, pinned to the deployment that serves it. */
  session?: SessionId;
  /** The id of the Responses answer this request returns, when a later request may continue from it. */
  responseId?: string;
  /** How long after this request its pins are worth keeping: the life of the prompt cache they protect. */
  ttlMs: number;
}

/** What {@linkcode sessionAffinity} reads. */
export interface SessionInput {
  protocol: Protocol;
  body: JsonObject;
  headers: Headers;
  /** The body's size in bytes. */
  size: number;
  /** The id of the Responses answer this request returns, when the gateway keeps it for a later request to continue. */
  responseId?: string;
  token: string;
  model: string;
  /** The pin's life when the request asks for no longer cache. */
  ttlMs: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * Under this many bytes a request holds fewer than the 1,024 prompt tokens below which no provider caches a prompt
 * (at the ~4 bytes a token that estimates use), so its prompt is not worth a pin of its own.
 */
export const MIN_CACHEABLE_BYTES = 4096;

/** The request's session, or undefined when it has none worth pinning. */
export async function sessionAffinity(input: SessionInput): Promise<SessionAffinity | undefined> {
  const { protocol, body } = input;
  const anthropic = protocol === "anthropic";
  const cache = anthropic ? anthropicCache(body) : { marked: true, ttlMs: openaiCacheTtl(body) };
  const ttlMs = Math.max(input.ttlMs, cache.ttlMs);
  const base = { token: input.token, model: input.model, ttlMs };
  const { responseId } = input;
  const explicit = explicitSession(input);
  if (explicit) return { ...base, session: { kind: explicit.kind, id: await safeKey(explicit.id) }, responseId };
  // Without an id, only a prompt a provider would cache gets a pin (Anthropic caches only what cache_control marks;
  // OpenAI-compatible services cache long prompts on their own).
  if (cache.marked && input.size >= MIN_CACHEABLE_BYTES) {
    const id = await digest(JSON.stringify(promptHead(protocol, body)));
    return { ...base, session: { kind: "prefix", id }, responseId };
  }
  return responseId ? { ...base, responseId } : undefined;
}

/** The session a client names: Claude Code's or Codex's header, the response it continues, or OpenAI's cache key. */
function explicitSession(input: SessionInput): SessionId | undefined {
  const header = clientSession(input.headers);
  if (header) return { kind: "session", id: header };
  const { body } = input;
  if (typeof body.previous_response_id === "string" && body.previous_response_id) {
    return { kind: "response", id: body.previous_response_id };
  }
  if (input.protocol !== "anthropic" && typeof body.prompt_cache_key === "string" && body.prompt_cache_key) {
    return { kind: "cache_key", id: body.prompt_cache_key };
  }
  return undefined;
}

/**
 * The session id a client sends as a header: Claude Code's `x-claude-code-session-id`, or Codex's `session_id` (its
 * `conversation_id` on older versions).
 */
export function clientSession(headers: Headers): string | undefined {
  return headers.get("x-claude-code-session-id") ?? headers.get("session_id") ?? headers.get("conversation_id") ??
    undefined;
}

/**
 * The part of a prompt that stays the same over a whole conversation: the system prompt (or instructions) and the
 * first message after it. The cached prefix grows every turn and its last breakpoint moves with it, so its head is
 * what ties one turn to the next; two conversations with the same head share a cache prefix, and a pin, anyway.
 * Cache marks are left out, and a string counts as its one text block, so a mark that moves on changes nothing.
 */
export function promptHead(protocol: Protocol, body: JsonObject): unknown[] {
  if (protocol === "anthropic") {
    return [blocksOf(body.system), Array.isArray(body.messages) ? entryOf(body.messages[0]) : null];
  }
  if (protocol === "gemini") {
    return [body.systemInstruction ?? null, Array.isArray(body.contents) ? body.contents[0] ?? null : null];
  }
  const items = protocol === "openai-chat" ? body.messages : body.input;
  const leading = protocol === "openai-responses" ? [body.instructions ?? null] : [];
  if (!Array.isArray(items)) return [...leading, blocksOf(items)];
  const end = items.findIndex((item) => !isObject(item) || (item.role !== "system" && item.role !== "developer"));
  return [...leading, ...items.slice(0, end === -1 ? items.length : end + 1).map(entryOf)];
}

/** A message (or input item) by its role and content only. */
function entryOf(item: unknown): unknown {
  return isObject(item) && "content" in item ? { role: item.role, content: blocksOf(item.content) } : item ?? null;
}

/** Content as blocks without cache marks. */
function blocksOf(content: unknown): unknown {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return content ?? null;
  return content.map((block) => isObject(block) && "cache_control" in block ? unmarked(block) : block);
}

function unmarked({ cache_control: _, ...block }: JsonObject): JsonObject {
  return block;
}

/** Whether an Anthropic request marks anything for caching, and for how long the longest mark keeps it. */
function anthropicCache(body: JsonObject): { marked: boolean; ttlMs: number } {
  let marked = false;
  let ttlMs = 0;
  const note = (holder: unknown) => {
    if (!isObject(holder) || !isObject(holder.cache_control)) return;
    marked = true;
    if (holder.cache_control.ttl === "1h") ttlMs = HOUR_MS;
  };
  // A top-level cache_control asks the API to place the breakpoint itself.
  note(body);
  if (Array.isArray(body.tools)) body.tools.forEach(note);
  if (Array.isArray(body.system)) body.system.forEach(note);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) {
      if (isObject(message) && Array.isArray(message.content)) message.content.forEach(note);
    }
  }
  return { marked, ttlMs };
}

/** OpenAI keeps a prompt cache for minutes by default, and up to a day with `prompt_cache_retention: "24h"`. */
function openaiCacheTtl(body: JsonObject): number {
  return body.prompt_cache_retention === "24h" ? DAY_MS : 0;
}

/** A client-sent id as a KV key part: as sent when it is short and plain, else its hash. */
async function safeKey(id: string): Promise<string> {
  return saneId(id) ?? `#${await digest(id)}`;
}

const encoder = new TextEncoder();

/** 128 bits of SHA-256 in base64url: collisions are out of reach, and the key stays short. */
async function digest(text: string): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)), 0, 16);
  return btoa(String.fromCharCode(...hash)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

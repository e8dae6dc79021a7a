/**
 * @module Mapping tables and helpers every translator shares: stop/finish reasons, usage arithmetic,
 * OpenAI-safe tool names and ids, and tolerant reading of tool-call arguments.
 */
import { GatewayError } from "../core/errors.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { tokenCount, type TokenCounts } from "../core/usage.ts";
import { invalidField } from "../core/validation.ts";

/** Anthropic `stop_reason` -> OpenAI chat `finish_reason` (see docs/protocols.md, "Stop and finish reasons"). */
export const FINISH_BY_STOP: Record<string, string> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
  // A paused server-tool turn has no OpenAI meaning; the turn simply ended.
  pause_turn: "stop",
};

/** OpenAI chat `finish_reason` -> Anthropic `stop_reason`; `refusal` is closest for a filter (same section). */
export const STOP_BY_FINISH: Record<string, string> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  function_call: "tool_use",
  content_filter: "refusal",
};

/** The finish reason for a stop reason; unknown values end the turn normally. */
export function finishFromStop(stop: unknown): string {
  return FINISH_BY_STOP[String(stop)] ?? "stop";
}

/** The stop reason for a finish reason; unknown or missing values end the turn normally. */
export function stopFromFinish(finish: unknown): string {
  return STOP_BY_FINISH[String(finish)] ?? "end_turn";
}

/** Anthropic `usage` object for a response or `message_delta`. */
export function anthropicUsage(u: TokenCounts): JsonObject {
  return {
    input_tokens: u.input,
    output_tokens: u.output,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cacheRead,
  };
}

/** OpenAI chat `usage`: the prompt counts every input token, cached ones included. */
export function chatUsage(u: TokenCounts): JsonObject {
  const prompt = u.input + u.cacheRead + u.cacheWrite;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.output,
    total_tokens: prompt + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead },
    completion_tokens_details: { reasoning_tokens: u.reasoning },
  };
}

/** Responses `usage`; Codex requires every count to be an integer. */
export function responsesUsage(u: TokenCounts): JsonObject {
  const input = u.input + u.cacheRead + u.cacheWrite;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cacheRead },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: input + u.output,
  };
}

/** OpenAI function names: `^[a-zA-Z0-9_-]{1,64}$` (see docs/protocols.md, "OpenAI Chat Completions"). */
const OPENAI_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** 32-bit FNV-1a as 8 hex digits: stable across requests so a shortened name stays the same in history. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** A name OpenAI accepts: unchanged when valid, else a readable prefix plus a hash of the original. */
export function shortenToolName(name: string): string {
  if (OPENAI_NAME.test(name)) return name;
  const prefix = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 55);
  return `${prefix}_${fnv1a(name)}`;
}

/** Remembers shortened tool names so the upstream's answers can be given back under the client's names. */
export interface ToolNames {
  /** The name to send upstream. */
  toUpstream(name: string): string;
  /** The client's name for a name the upstream used. */
  toClient(name: string): string;
}

/** A fresh name map for one request. */
export function toolNames(): ToolNames {
  const originals = new Map<string, string>();
  return {
    toUpstream(name) {
      const short = shortenToolName(name);
      if (short !== name) originals.set(short, name);
      return short;
    },
    toClient: (name) => originals.get(name) ?? name,
  };
}

/**
 * A tool-call id matching `^[a-zA-Z0-9_-]+$`, which Anthropic requires and Claude Code echoes back: other characters
 * become `_`, and a missing id is `fallback`, made safe the same way (a client's request id may hold `.` or `:`).
 */
export function sanitizeToolId(id: unknown, fallback: string): string {
  const text = typeof id === "string" && id ? id : fallback;
  return text.replace(/[^a-zA-Z0-9_-]/g, "_");
}

/**
 * The id of an answer's tool call at `position` (among its tool calls): the upstream's own, made safe, or one made of
 * `prefix`, the answer's id and the position, so the same answer gives the same ids whether streamed or whole. The
 * answer's id is the Responses id when there is one (fresh for every request, so ids in a stored conversation never
 * repeat), else the request id.
 */
export function answerToolId(
  id: unknown,
  prefix: "toolu" | "call",
  answer: { requestId: string; responseId?: string },
  position: number,
): string {
  const base = answer.responseId?.replace(/^resp_/, "") ?? answer.requestId;
  return sanitizeToolId(id, `${prefix}_${base}_${position}`);
}

/**
 * Parses a tool call's JSON arguments into an object. Empty means `{}`; text that is not a JSON object is kept
 * under `_raw_arguments` so the client's tool validation reports it rather than the stream failing.
 */
export function parseToolArguments(text: unknown): JsonObject {
  if (typeof text !== "string" || text.trim() === "") return {};
  try {
    const value = JSON.parse(text);
    return isObject(value) ? value : { _raw_arguments: text };
  } catch {
    return { _raw_arguments: text };
  }
}

/** A tool call's arguments as the JSON text of an object: see {@linkcode parseToolArguments}. */
export function toolArgumentsText(text: unknown): string {
  return JSON.stringify(parseToolArguments(text));
}

/** Text of a string or an array of `{type:"text"|"input_text"|"output_text", text}` parts, joined by newlines. */
export function joinText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part) => isObject(part) && typeof part.text === "string")
    .map((part) => (part as JsonObject).text as string)
    .join("\n");
}

/** A 400 naming the field the gateway cannot translate. */
export function unsupported(param: string, message: string): GatewayError {
  return invalidField(param, message);
}

/** Splits an image data URL into media type and base64 data; undefined for remote URLs. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1], data: match[2] } : undefined;
}

/** Anthropic image block for an OpenAI image URL (data URLs become base64 sources). */
export function anthropicImage(url: string): JsonObject {
  const data = parseDataUrl(url);
  const source = data ? { type: "base64", media_type: data.mediaType, data: data.data } : { type: "url", url };
  return { type: "image", source };
}

/** OpenAI image URL for an Anthropic image source; undefined for sources OpenAI cannot take (file ids). */
export function imageUrlFromSource(source: unknown): string | undefined {
  if (!isObject(source)) return undefined;
  if (source.type === "base64") return `data:${source.media_type};base64,${source.data}`;
  if (source.type === "url" && typeof source.url === "string") return source.url;
  return undefined;
}

/**
 * Thinking budget -> `reasoning_effort`. No standard mapping exists, so these buckets are ours (see docs/protocols.md,
 * "Thinking and reasoning effort").
 */
export function effortFromBudget(thinking: unknown): string | undefined {
  if (!isObject(thinking)) return undefined;
  if (thinking.type === "adaptive") return "medium";
  if (thinking.type !== "enabled") return undefined;
  const budget = tokenCount(thinking.budget_tokens);
  if (budget < 4096) return "low";
  if (budget < 16384) return "medium";
  return "high";
}

/** OpenAI `reasoning_effort` -> thinking budget; efforts that mean "no reasoning" give undefined. */
export const BUDGET_BY_EFFORT: Record<string, number> = {
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 24576,
  max: 32768,
};

/**
 * Anthropic `thinking` for an effort and `max_tokens`: the budget must be at least 1024 and below `max_tokens`,
 * so a budget that does not fit is shrunk, and dropped when even 1024 does not fit.
 */
export function thinkingFromEffort(effort: unknown, maxTokens: number): JsonObject | undefined {
  const wanted = BUDGET_BY_EFFORT[String(effort)];
  if (wanted === undefined) return undefined;
  const budget = Math.min(wanted, maxTokens - 1);
  return budget >= 1024 ? { type: "enabled", budget_tokens: budget } : undefined;
}

/** A client's `max_tokens` lowered to the upstream's ceiling when one is configured. */
export function clampMaxTokens(value: unknown, ceiling: number | undefined): number | undefined {
  if (typeof value !== "number" || !(value > 0)) return undefined;
  return ceiling === undefined ? Math.trunc(value) : Math.min(Math.trunc(value), ceiling);
}

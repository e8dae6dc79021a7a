/**
 * @module OpenAI Chat Completions on the wire (see docs/protocols.md, "OpenAI Chat Completions"): the bodies its
 * clients send, what an answer is, its error body, its usage, and its stream's chunks as translators read them.
 */
import { z } from "zod";
import { byteMarker, markerSet } from "../core/byte_search.ts";
import { clientMessage } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { tokenCount, type TokenCounts } from "../core/usage.ts";
import { openaiErrors } from "./openai.ts";
import {
  COMMENT_KEEP_ALIVE,
  eventPayload,
  everyItem,
  isCount,
  namesModel,
  optionalFlag,
  type StreamingProtocol,
  throwIfError,
} from "./wire.ts";

const ChatBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string() })).min(1),
  stream: z.boolean().nullish(),
});

/**
 * Reads an OpenAI chat `usage`. Its `prompt_tokens` includes cached tokens, and some compatible servers report cache
 * writes beside the reads (as `prompt_tokens_details.cache_creation_tokens` or `cache_creation_input_tokens`), also
 * part of the prompt: both are taken out of `input`, so each prompt token is counted once, as what it was.
 */
export function usageFromChat(usage: unknown): TokenCounts {
  const u = isObject(usage) ? usage : {};
  const prompt = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const completion = isObject(u.completion_tokens_details) ? u.completion_tokens_details : {};
  const total = tokenCount(u.prompt_tokens);
  const cacheRead = tokenCount(prompt.cached_tokens);
  // Writes are priced at their own rate, so they must not count more tokens than the prompt has left.
  const cacheWrite = Math.min(
    Math.max(0, total - cacheRead),
    tokenCount(prompt.cache_creation_tokens ?? u.cache_creation_input_tokens),
  );
  return {
    input: Math.max(0, total - cacheRead - cacheWrite),
    output: tokenCount(u.completion_tokens),
    cacheRead,
    cacheWrite,
    reasoning: tokenCount(completion.reasoning_tokens),
  };
}

/** What a chat message or a chunk's delta says: its text, its reasoning and its tool calls (as sent). */
export interface ChatContent {
  /** The text; "" for none. */
  content: string;
  /** Reasoning text, under either name compatible servers use; "" for none. */
  reasoning: string;
  /** Tool calls, or in a stream their fragments: the objects of `tool_calls`. */
  tool_calls: JsonObject[];
}

/** A chat message or delta read once into its {@linkcode ChatContent}. */
export function chatContent(value: unknown): ChatContent {
  const m = isObject(value) ? value : {};
  const reasoning = m.reasoning_content ?? m.reasoning;
  return {
    content: typeof m.content === "string" ? m.content : "",
    reasoning: typeof reasoning === "string" ? reasoning : "",
    tool_calls: Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObject) : [],
  };
}

/** A chat completion, or one chunk of its stream, as its first choice says it. */
export interface ChatChoice {
  id: unknown;
  usage?: JsonObject;
  /** The first choice's message (a whole answer) or delta (a chunk). */
  message: ChatContent;
  finish?: unknown;
}

/** Reads a whole chat completion, or with `delta` one chunk of its stream. */
export function readChatCompletion(body: JsonObject, part: "message" | "delta" = "message"): ChatChoice {
  const choice = Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0] : {};
  return {
    id: body.id,
    usage: isObject(body.usage) ? body.usage : undefined,
    message: chatContent(choice[part]),
    finish: choice.finish_reason ?? undefined,
  };
}

/** Reads one chat chunk; "done" for `[DONE]`, and an in-band error is thrown as a GatewayError. */
export function readChatDelta(message: SseMessage): ChatChoice | "done" {
  throwIfError(message);
  if (message.data.trim() === "[DONE]") return "done";
  return readChatCompletion(eventPayload(message), "delta");
}

/** OpenAI Chat Completions: POST /v1/chat/completions. */
export const chatProtocol: StreamingProtocol<ChatChoice | "done"> = {
  name: "openai-chat",
  bodies: {
    generate: {
      schema: ChatBody,
      accepts: (b) =>
        namesModel(b) && everyItem(b.messages, (m) => typeof m.role === "string") &&
        (b.stream === null || optionalFlag(b.stream)),
    },
  },
  isAnswer: (body, operation) => operation === "count_tokens" ? isCount(body) : Array.isArray(body.choices),
  errors: openaiErrors,
  usage: {
    read(body) {
      const choices = Array.isArray(body.choices) ? body.choices : [];
      const reasons = choices.map((choice) => isObject(choice) ? choice.finish_reason : undefined);
      return { usage: isObject(body.usage) ? body.usage : undefined, id: body.id, model: body.model, reasons };
    },
    counts: (usage) => usageFromChat(usage),
  },
  stream: {
    terminal: (m) => m.data === "[DONE]",
    // Some OpenAI-compatible servers end at the finish chunk, without usage or [DONE].
    finishing: (m) => /"finish_reason":\s*"/.test(m.data),
    markers: markerSet(["usage", "error", "[DONE]", "finish_reason", "response.failed"].map(byteMarker)),
    // OpenAI sends `"usage":null` on every chunk of a stream that asked for usage, and those carry nothing.
    usage: /"usage"\s*:\s*\{/,
    names: {
      id: /"id"\s*:\s*"([^"]{1,128})"/,
      model: /"model"\s*:\s*"([^"]{1,128})"/,
      finish: /"finish_reason"\s*:\s*"([a-z_]{1,40})"/,
    },
    keepAlive: COMMENT_KEEP_ALIVE,
    // A chunk that is the error body alone (see docs/protocols.md, "Server-sent events").
    errorEvents: (err) => [{ data: JSON.stringify(openaiErrors.body(err, clientMessage(err))) }],
    read: readChatDelta,
  },
};

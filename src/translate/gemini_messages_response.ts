/**
 * @module Anthropic Messages answer -> Gemini `GenerateContentResponse`, whole and streamed, and the Gemini client's
 * translator onto an Anthropic upstream.
 */
import type { SseMessage, StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { NO_USAGE, tokenCount, type TokenCounts } from "../core/usage.ts";
import {
  endAnthropicStream,
  mergeAnthropicUsage,
  readAnthropicEvent,
  readAnthropicMessage,
  usageFromAnthropic,
} from "../protocols/anthropic.ts";
import { geminiToMessagesRequest, thoughtSignatureFor } from "./gemini_messages_request.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { answerToolId } from "./shared.ts";

/** Anthropic `stop_reason` -> Gemini `finishReason` (see docs/protocols.md, "Stop and finish reasons"). */
export const FINISH_REASON_BY_STOP: Record<string, string> = {
  end_turn: "STOP",
  stop_sequence: "STOP",
  tool_use: "STOP",
  pause_turn: "STOP",
  max_tokens: "MAX_TOKENS",
  model_context_window_exceeded: "MAX_TOKENS",
  refusal: "SAFETY",
};

/** Gemini `usageMetadata`: the prompt counts cached tokens in, and output is split into answer and thoughts. */
export function usageMetadata(u: TokenCounts): JsonObject {
  const prompt = u.input + u.cacheRead + u.cacheWrite;
  const out: JsonObject = {
    promptTokenCount: prompt,
    candidatesTokenCount: Math.max(0, u.output - u.reasoning),
    totalTokenCount: prompt + u.output,
  };
  if (u.cacheRead > 0) out.cachedContentTokenCount = u.cacheRead;
  if (u.reasoning > 0) out.thoughtsTokenCount = u.reasoning;
  return out;
}

/** One response (or stream chunk) around `parts`. */
function envelope(ctx: TranslateContext, id: string, parts: JsonObject[], finish?: JsonObject): JsonObject {
  const candidate: JsonObject = { content: { role: "model", parts }, index: 0 };
  const out: JsonObject = { candidates: [candidate], modelVersion: ctx.model, responseId: id };
  if (finish) {
    candidate.finishReason = FINISH_REASON_BY_STOP[String(finish.stop)] ?? "STOP";
    out.usageMetadata = usageMetadata(finish.usage as TokenCounts);
  }
  return out;
}

/** A thinking block as a thought part; its signature carries the whole block back on the next turn. */
function thoughtPart(block: JsonObject): JsonObject {
  const text = block.type === "thinking" ? String(block.thinking ?? "") : "";
  return { text, thought: true, thoughtSignature: thoughtSignatureFor(block) };
}

/**
 * Keeps the answer's last thinking block so the next function call carries its signature too, as Gemini puts one
 * on the first call of a turn: clients that drop thought parts from their history keep that one.
 */
function callSigner() {
  let pending: string | undefined;
  return {
    thought(block: JsonObject) {
      pending = thoughtSignatureFor(block);
    },
    call(part: JsonObject): JsonObject {
      if (pending) part.thoughtSignature = pending;
      pending = undefined;
      return part;
    },
  };
}

/** A non-streamed Anthropic message as a Gemini response. */
export function messagesToGeminiResponse(body: JsonObject, ctx: TranslateContext): JsonObject {
  const answer = readAnthropicMessage(body);
  const signer = callSigner();
  let calls = 0;
  const parts = answer.content.flatMap((b): JsonObject[] => {
    if (b.type === "thinking" || b.type === "redacted_thinking") {
      signer.thought(b);
      return [thoughtPart(b)];
    }
    if (b.type === "text") return b.text ? [{ text: b.text }] : [];
    if (b.type !== "tool_use") return [];
    const id = answerToolId(b.id, "toolu", ctx, calls++);
    return [signer.call({ functionCall: { id, name: b.name, args: isObject(b.input) ? b.input : {} } })];
  });
  return envelope(ctx, answer.id ?? ctx.requestId, parts, {
    stop: answer.stop_reason,
    usage: usageFromAnthropic(answer.usage),
  });
}

/** Anthropic events -> Gemini chunks: text and thoughts as they come, each function call whole, usage last. */
export function messagesToGeminiStream(ctx: TranslateContext): StreamStep {
  let id = ctx.requestId;
  let usage: TokenCounts = NO_USAGE;
  let stop: unknown;
  let stopped = false;
  let calls = 0;
  const signer = callSigner();
  /** The open block: its kind and what it has gathered. */
  let open: JsonObject = {};
  const chunk = (parts: JsonObject[], finish?: JsonObject): SseMessage => ({
    data: JSON.stringify(envelope(ctx, id, parts, finish)),
  });
  return {
    next(message) {
      if (stopped) return [];
      const data = readAnthropicEvent(message);
      switch (data.type) {
        case "message_start":
          id = data.message.id ?? id;
          usage = usageFromAnthropic(data.message.usage);
          return [];
        case "content_block_start":
          open = { ...data.content_block, json: "" };
          if (open.type === "thinking") open.thinking = "";
          return [];
        case "content_block_delta": {
          const d = data.delta;
          if (d.type === "text_delta") return d.text ? [chunk([{ text: d.text }])] : [];
          if (d.type === "thinking_delta" && d.thinking) {
            open.thinking = String(open.thinking ?? "") + d.thinking;
            return [chunk([{ text: d.thinking, thought: true }])];
          }
          if (d.type === "signature_delta") open.signature = String(open.signature ?? "") + d.signature;
          if (d.type === "input_json_delta") open.json = String(open.json) + d.partial_json;
          return [];
        }
        case "content_block_stop": {
          const { json, ...block } = open;
          open = {};
          if (block.type === "thinking" || block.type === "redacted_thinking") {
            signer.thought(block);
            // The thought's text has gone out already; this part carries only its signature.
            return [chunk([{ ...thoughtPart(block), text: "" }])];
          }
          if (block.type !== "tool_use") return [];
          let args: unknown = {};
          try {
            args = String(json).trim() ? JSON.parse(String(json)) : {};
          } catch {
            args = { _raw_arguments: json };
          }
          const callId = answerToolId(block.id, "toolu", ctx, calls++);
          const call = { id: callId, name: block.name, args: isObject(args) ? args : { _raw_arguments: json } };
          return [chunk([signer.call({ functionCall: call })])];
        }
        case "message_delta":
          if (data.stop_reason) stop = data.stop_reason;
          usage = mergeAnthropicUsage(usage, data.usage);
          return [];
        case "message_stop":
          stopped = true;
          return [chunk([{ text: "" }], { stop, usage })];
        default:
          return [];
      }
    },
    end: () => endAnthropicStream(stopped),
  };
}

/** A count_tokens answer (`input_tokens`, cache counts included) as Gemini's `{totalTokens}`. */
export function countToGemini(body: JsonObject): JsonObject {
  const total = tokenCount(body.input_tokens) + tokenCount(body.cache_read_input_tokens) +
    tokenCount(body.cache_creation_input_tokens);
  return { totalTokens: total };
}

/** Gemini client -> Anthropic upstream. */
export function geminiViaMessages(ctx: TranslateContext): Translation {
  const counting = ctx.operation === "count_tokens";
  return {
    request: (body) => geminiToMessagesRequest(body, ctx, counting),
    response: (body) => counting ? countToGemini(body) : messagesToGeminiResponse(body, ctx),
    stream: () => messagesToGeminiStream(ctx),
  };
}

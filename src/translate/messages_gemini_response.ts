/**
 * @module Gemini answer -> Anthropic Messages answer, whole and streamed, and the Messages client's translator onto a
 * Gemini upstream.
 */
import { GatewayError } from "../core/errors.ts";
import type { SseMessage, StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { NO_USAGE, tokenCount, type TokenCounts } from "../core/usage.ts";
import { readGeminiAnswer, readGeminiChunk, usageFromGemini } from "../protocols/gemini.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { idWithSignature, messagesToGeminiRequest, textSignatureBlock } from "./messages_gemini_request.ts";
import { answerToolId, anthropicUsage, type ToolNames, toolNames } from "./shared.ts";

/** Gemini `finishReason` -> Anthropic `stop_reason` (see docs/protocols.md, "Stop and finish reasons"). */
export const STOP_BY_FINISH_REASON: Record<string, string> = {
  STOP: "end_turn",
  MAX_TOKENS: "max_tokens",
  SAFETY: "refusal",
  RECITATION: "refusal",
  BLOCKLIST: "refusal",
  PROHIBITED_CONTENT: "refusal",
  SPII: "refusal",
  IMAGE_SAFETY: "refusal",
};

/** The stop reason of an answer: a STOP with calls is a tool-use stop; a blocked prompt is a refusal. */
function stopOf(finish: unknown, calls: number, blocked: boolean): string {
  if (blocked) return "refusal";
  const stop = STOP_BY_FINISH_REASON[String(finish)] ?? "end_turn";
  return stop === "end_turn" && calls > 0 ? "tool_use" : stop;
}

/** The answer's state as parts arrive: blocks in order, thinking only before anything else. */
interface Builder {
  ctx: TranslateContext;
  names: ToolNames;
  calls: number;
}

/** A functionCall part as a tool_use block; the part's thought signature rides in the id. */
function toolUse(part: JsonObject, b: Builder): JsonObject {
  const call = part.functionCall as JsonObject;
  const id = idWithSignature(answerToolId(call.id, "toolu", b.ctx, b.calls++), part.thoughtSignature as string);
  return {
    type: "tool_use",
    id,
    name: b.names.toClient(String(call.name)),
    input: isObject(call.args) ? call.args : {},
  };
}

/** The first thought signature on a part that is not a function call (text, thought, or an empty text part). */
function signatureOffCalls(parts: readonly JsonObject[]): string | undefined {
  const signed = parts.find((p) => !isObject(p.functionCall) && typeof p.thoughtSignature === "string");
  return signed?.thoughtSignature as string | undefined;
}

/**
 * The answer's calls with the signature Gemini put on another part of the step (a trailing empty text part, as it
 * does in streams) moved onto the first call when that has none: the call is where the API checks it.
 */
function signedCalls(calls: readonly JsonObject[], offCalls: string | undefined): JsonObject[] {
  if (calls.length === 0 || !offCalls || typeof calls[0].thoughtSignature === "string") return [...calls];
  return [{ ...calls[0], thoughtSignature: offCalls }, ...calls.slice(1)];
}

/** A whole Gemini answer as an Anthropic message. */
export function geminiToMessagesResponse(body: JsonObject, b: Builder): JsonObject {
  const { parts, finish, blocked, responseId, usageMetadata } = readGeminiAnswer(body);
  const content: JsonObject[] = [];
  const thought = parts.filter((p) => p.thought === true).map((p) => String(p.text ?? "")).join("");
  const offCalls = signatureOffCalls(parts);
  const calls = signedCalls(parts.filter((p) => isObject(p.functionCall)), offCalls);
  // Thinking leads the answer, as Anthropic clients require; it has no signature Anthropic could verify. An answer
  // without calls keeps its text's signature there, for the next turn.
  if (offCalls && calls.length === 0) content.push(textSignatureBlock(offCalls, thought || undefined));
  else if (thought) content.push({ type: "thinking", thinking: thought, signature: "" });
  for (const part of parts.filter((p) => p.thought !== true)) {
    const last = content.at(-1);
    if (typeof part.text === "string" && part.text) {
      if (last?.type === "text") last.text = String(last.text) + part.text;
      else content.push({ type: "text", text: part.text });
    } else if (isObject(part.functionCall)) content.push(toolUse(calls.shift()!, b));
  }
  return {
    id: `msg_${String(responseId ?? b.ctx.requestId)}`,
    type: "message",
    role: "assistant",
    model: b.ctx.model,
    content,
    stop_reason: stopOf(finish, b.calls, blocked && parts.length === 0),
    stop_sequence: null,
    usage: anthropicUsage(usageFromGemini(usageMetadata)),
  };
}

function event(data: JsonObject): SseMessage {
  return { event: String(data.type), data: JSON.stringify(data) };
}

/** Gemini chunks -> Anthropic events. Gemini ends by closing the stream, so the ending is written at the end. */
export function geminiToMessagesStream(b: Builder): StreamStep {
  let started = false;
  let open: "thinking" | "text" | undefined;
  let index = -1;
  let usage: TokenCounts = NO_USAGE;
  let finish: unknown;
  let blocked = false;
  let anything = false;
  /** Calls wait for the end: the step's signature may come on a later part (see signedCalls). */
  const held: JsonObject[] = [];
  let offCalls: string | undefined;
  const close = (): SseMessage[] => {
    if (!open) return [];
    open = undefined;
    return [event({ type: "content_block_stop", index })];
  };
  const openBlock = (kind: "thinking" | "text"): SseMessage[] => {
    if (open === kind) return [];
    const out = close();
    open = kind;
    index++;
    const block = kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" };
    return [...out, event({ type: "content_block_start", index, content_block: block })];
  };
  return {
    next(message) {
      const chunk = readGeminiChunk(message);
      const out: SseMessage[] = [];
      if (chunk.usageMetadata) usage = usageFromGemini(chunk.usageMetadata);
      if (!started) {
        started = true;
        const id = `msg_${String(chunk.responseId ?? b.ctx.requestId)}`;
        const msg = { id, type: "message", role: "assistant", model: b.ctx.model, content: [], stop_reason: null };
        out.push(event({ type: "message_start", message: { ...msg, usage: anthropicUsage(usage) } }));
      }
      if (chunk.finish) finish = chunk.finish;
      blocked ||= chunk.blocked;
      for (const part of chunk.parts) {
        if (!isObject(part.functionCall) && typeof part.thoughtSignature === "string") {
          offCalls ??= part.thoughtSignature;
        }
        if (part.thought === true) {
          // Thinking after the answer has begun would come too late for Anthropic clients; it is left out.
          if (anything || typeof part.text !== "string" || !part.text) continue;
          out.push(...openBlock("thinking"));
          out.push(
            event({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: part.text } }),
          );
        } else if (typeof part.text === "string" && part.text) {
          anything = true;
          out.push(...openBlock("text"));
          out.push(event({ type: "content_block_delta", index, delta: { type: "text_delta", text: part.text } }));
        } else if (isObject(part.functionCall)) {
          anything = true;
          held.push(part);
        }
      }
      return out;
    },
    end() {
      if (finish === undefined && !blocked) {
        throw new GatewayError("upstream", "Upstream stream ended before its finishReason");
      }
      const calls: SseMessage[] = [...close()];
      for (const part of signedCalls(held, offCalls)) {
        const { input, ...block } = toolUse(part, b);
        index++;
        calls.push(event({ type: "content_block_start", index, content_block: { ...block, input: {} } }));
        const delta = { type: "input_json_delta", partial_json: JSON.stringify(input) };
        calls.push(event({ type: "content_block_delta", index, delta }), event({ type: "content_block_stop", index }));
      }
      return [
        ...calls,
        event({
          type: "message_delta",
          delta: { stop_reason: stopOf(finish, b.calls, blocked && !anything), stop_sequence: null },
          usage: anthropicUsage(usage),
        }),
        event({ type: "message_stop" }),
      ];
    },
  };
}

/** Anthropic client -> Gemini upstream. */
export function messagesViaGemini(ctx: TranslateContext): Translation {
  const builder: Builder = { ctx, names: toolNames(), calls: 0 };
  const counting = ctx.operation === "count_tokens";
  return {
    request: (body) => messagesToGeminiRequest(body, ctx, builder.names),
    response: (body) =>
      counting ? { input_tokens: tokenCount(body.totalTokens) } : geminiToMessagesResponse(body, builder),
    stream: () => geminiToMessagesStream(builder),
  };
}

/**
 * @module Anthropic Messages answer -> OpenAI Chat Completions answer, non-streamed and streamed, plus the
 * chat <- Anthropic translator that ties both directions together.
 */
import type { SseMessage, StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { NO_USAGE, type TokenCounts } from "../core/usage.ts";
import {
  endAnthropicStream,
  mergeAnthropicUsage,
  readAnthropicEvent,
  readAnthropicMessage,
  usageFromAnthropic,
} from "../protocols/anthropic.ts";
import { chatToMessagesRequest, freeformNames } from "./chat_messages_request.ts";
import { freeformInput } from "./freeform_tools.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { answerToolId, chatUsage, finishFromStop } from "./shared.ts";

function created(ctx: TranslateContext): number {
  return Math.floor(ctx.now() / 1000);
}

/** What the answer side needs to know of the request. */
export interface ChatAnswerOptions {
  ctx: TranslateContext;
  /** The request's freeform tools: calls to them go back as `custom` calls carrying the raw input. */
  freeform: Set<string>;
  /** Whether the client asked for a usage chunk at the end of the stream. */
  includeUsage?: boolean;
}

/** A non-streamed Anthropic message as a chat completion with one choice. */
export function messagesToChatResponse(body: JsonObject, { ctx, freeform }: ChatAnswerOptions): JsonObject {
  const answer = readAnthropicMessage(body);
  const blocks = answer.content;
  const text = blocks.filter((b) => b.type === "text").map((b) => String(b.text ?? "")).join("");
  const reasoning = blocks.filter((b) => b.type === "thinking").map((b) => String(b.thinking ?? "")).join("");
  const toolCalls = blocks.filter((b) => b.type === "tool_use").map((b, i) => {
    const id = answerToolId(b.id, "call", ctx, i);
    return freeform.has(String(b.name))
      ? { id, type: "custom", custom: { name: b.name, input: freeformInput(b.input ?? {}) } }
      : { id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } };
  });
  const message: JsonObject = { role: "assistant", content: text || null, refusal: null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  // DeepSeek-style field: harmless to clients that ignore it, useful to those that show reasoning.
  if (reasoning) message.reasoning_content = reasoning;
  return {
    id: answer.id ?? `chatcmpl-${ctx.requestId}`,
    object: "chat.completion",
    created: created(ctx),
    model: ctx.model,
    choices: [{ index: 0, message, finish_reason: finishFromStop(answer.stop_reason), logprobs: null }],
    usage: chatUsage(usageFromAnthropic(answer.usage)),
  };
}

/**
 * Anthropic events -> chat chunks. Tool calls are numbered among tool calls only (not block indices), and the
 * finish chunk is followed by a usage chunk when the client asked for one, then `[DONE]`. A freeform call's raw
 * input can only be read out of its function form once the block is complete, so it is sent in one piece then.
 */
export function messagesToChatStream({ ctx, freeform, includeUsage = false }: ChatAnswerOptions): StreamStep {
  let id = `chatcmpl-${ctx.requestId}`;
  // Every chunk of one completion carries the same creation time, as OpenAI's do.
  const createdAt = created(ctx);
  let stopped = false;
  let stopReason: unknown;
  let usage: TokenCounts = NO_USAGE;
  const toolIndex = new Map<number, number>();
  /** Tool calls (by block index) that have had argument text; the others get "{}" when their block stops. */
  const withArguments = new Set<number>();
  /** Function-form arguments of the freeform calls (by block index), until their block stops. */
  const freeformArgs = new Map<number, string>();

  function chunk(delta: JsonObject, finish: string | null = null): SseMessage {
    const data: JsonObject = {
      id,
      object: "chat.completion.chunk",
      created: createdAt,
      model: ctx.model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    };
    if (includeUsage) data.usage = null;
    return { data: JSON.stringify(data) };
  }

  function finishing(): SseMessage[] {
    stopped = true;
    const out = [chunk({}, finishFromStop(stopReason))];
    if (includeUsage) {
      const data = { id, object: "chat.completion.chunk", created: createdAt, model: ctx.model, choices: [] };
      out.push({ data: JSON.stringify({ ...data, usage: chatUsage(usage) }) });
    }
    out.push({ data: "[DONE]" });
    return out;
  }

  return {
    next(message) {
      if (stopped) return [];
      const data = readAnthropicEvent(message);
      switch (data.type) {
        case "message_start":
          id = data.message.id ?? id;
          usage = usageFromAnthropic(data.message.usage);
          return [chunk({ role: "assistant", content: "" })];
        case "content_block_start": {
          const block = data.content_block;
          if (block.type !== "tool_use") return [];
          const k = toolIndex.size;
          toolIndex.set(data.index, k);
          const id = answerToolId(block.id, "call", ctx, k);
          if (freeform.has(String(block.name))) {
            freeformArgs.set(data.index, "");
            return [chunk({ tool_calls: [{ index: k, id, type: "custom", custom: { name: block.name } }] })];
          }
          const call = { index: k, id, type: "function", function: { name: block.name, arguments: "" } };
          return [chunk({ tool_calls: [call] })];
        }
        case "content_block_delta": {
          const { delta: d, index } = data;
          if (d.type === "text_delta") return d.text ? [chunk({ content: d.text })] : [];
          if (d.type === "thinking_delta") return d.thinking ? [chunk({ reasoning_content: d.thinking })] : [];
          if (d.type !== "input_json_delta") return [];
          const k = toolIndex.get(index);
          const args = freeformArgs.get(index);
          if (args !== undefined) {
            freeformArgs.set(index, args + d.partial_json);
            return [];
          }
          if (!d.partial_json || k === undefined) return [];
          withArguments.add(index);
          return [chunk({ tool_calls: [{ index: k, function: { arguments: d.partial_json } }] })];
        }
        case "content_block_stop": {
          const k = toolIndex.get(data.index);
          const args = freeformArgs.get(data.index);
          if (k !== undefined && args !== undefined) {
            return [chunk({ tool_calls: [{ index: k, custom: { input: freeformInput(args || "{}") } }] })];
          }
          if (k === undefined || withArguments.has(data.index)) return [];
          // A tool without input sends no JSON at all; clients parse the arguments, so "" would not do.
          return [chunk({ tool_calls: [{ index: k, function: { arguments: "{}" } }] })];
        }
        case "message_delta":
          if (data.stop_reason) stopReason = data.stop_reason;
          usage = mergeAnthropicUsage(usage, data.usage);
          return [];
        case "message_stop":
          return finishing();
        default:
          return [];
      }
    },
    end: () => endAnthropicStream(stopped),
  };
}

/** Chat client -> Anthropic upstream. */
export function chatViaMessages(ctx: TranslateContext): Translation {
  const options: ChatAnswerOptions = { ctx, freeform: new Set() };
  return {
    request(body) {
      options.includeUsage = isObject(body.stream_options) && body.stream_options.include_usage === true;
      options.freeform = freeformNames(body.tools);
      return chatToMessagesRequest(body, ctx);
    },
    response: (body) => messagesToChatResponse(body, options),
    stream: () => messagesToChatStream(options),
  };
}

/**
 * @module OpenAI Chat Completions answer -> Anthropic Messages answer, non-streamed and streamed (see
 * docs/protocols.md, "Anthropic Messages client, chat upstream"), plus the Messages <- chat translator that ties both
 * directions together.
 */
import { GatewayError } from "../core/errors.ts";
import { estimatePromptTokens, estimateTokens } from "../core/estimate.ts";
import type { SseMessage, StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { NO_USAGE, type TokenCounts } from "../core/usage.ts";
import { readChatCompletion, readChatDelta, usageFromChat } from "../protocols/chat.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { messagesToChatRequest } from "./messages_chat_request.ts";
import {
  answerToolId,
  anthropicUsage,
  parseToolArguments,
  stopFromFinish,
  toolArgumentsText,
  type ToolNames,
  toolNames,
} from "./shared.ts";
import { toolCallBuffer } from "./chat_tool_calls.ts";

/**
 * The stop reason of an answer. Some servers end tool calls with finish_reason "stop" (or none), and the calls are
 * what the client must act on; but a call cut by the output limit ("length") is a truncated answer, not a call.
 */
function stopWithCalls(finish: unknown, hasCalls: boolean): string {
  if (hasCalls && finish !== "length" && finish !== "content_filter") return "tool_use";
  return stopFromFinish(finish);
}

/** Per-request state shared by the request and answer sides. */
export interface MessagesChatState {
  ctx: TranslateContext;
  names: ToolNames;
  /** Estimated prompt tokens, reported when the upstream sends no usage (Claude Code plans context on it). */
  promptTokens: number;
}

/** Usage from the upstream, or an estimate when it sent none. */
function usageOrEstimate(usage: JsonObject | undefined, state: MessagesChatState, outputChars: number): TokenCounts {
  if (usage) return usageFromChat(usage);
  return { ...NO_USAGE, input: state.promptTokens, output: estimateTokens(outputChars) };
}

/** A non-streamed chat completion as an Anthropic message: thinking, then text, then tool calls. */
export function chatToMessagesResponse(body: JsonObject, state: MessagesChatState): JsonObject {
  const { names, ctx } = state;
  const { message, finish, usage, id } = readChatCompletion(body);
  const content: JsonObject[] = [];
  if (message.reasoning) content.push({ type: "thinking", thinking: message.reasoning, signature: "" });
  if (message.content) content.push({ type: "text", text: message.content });
  const calls = message.tool_calls;
  calls.forEach((call, i) => {
    const fn = isObject(call.function) ? call.function : {};
    content.push({
      type: "tool_use",
      id: answerToolId(call.id, "toolu", ctx, i),
      name: names.toClient(String(fn.name ?? "")),
      input: parseToolArguments(fn.arguments),
    });
  });
  return {
    id: typeof id === "string" && id ? id : `msg_${ctx.requestId}`,
    type: "message",
    role: "assistant",
    model: ctx.model,
    content,
    stop_reason: stopWithCalls(finish, calls.length > 0),
    stop_sequence: null,
    usage: anthropicUsage(usageOrEstimate(usage, state, JSON.stringify(content).length)),
  };
}

function event(data: JsonObject): SseMessage {
  return { event: String(data.type), data: JSON.stringify(data) };
}

/**
 * Chat chunks -> Anthropic events. One block is open at a time; tool calls are buffered per index and each is
 * emitted whole at the end, so interleaved or nameless fragments still give contiguous, valid JSON input.
 */
export function chatToMessagesStream(state: MessagesChatState): StreamStep {
  const { names, ctx } = state;
  let outputChars = 0;
  let started = false;
  let finished = false;
  // Whether any tool call went out: the buffer is drained as calls complete, so its size cannot tell at the end.
  let calledTools = false;
  let open: "text" | "thinking" | undefined;
  let index = 0;
  let finish: unknown;
  let usage: JsonObject | undefined;
  const calls = toolCallBuffer();

  function start(id: unknown): SseMessage[] {
    if (started) return [];
    started = true;
    const message = {
      id: typeof id === "string" && id ? id : `msg_${ctx.requestId}`,
      type: "message",
      role: "assistant",
      model: ctx.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: state.promptTokens,
        output_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    };
    return [event({ type: "message_start", message })];
  }
  function close(): SseMessage[] {
    if (!open) return [];
    open = undefined;
    return [event({ type: "content_block_stop", index: index++ })];
  }
  function delta(kind: "text" | "thinking", text: string): SseMessage[] {
    outputChars += text.length;
    const out: SseMessage[] = [];
    if (open !== kind) {
      out.push(...close());
      const block = kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" };
      out.push(event({ type: "content_block_start", index, content_block: block }));
      open = kind;
    }
    const d = kind === "text" ? { type: "text_delta", text } : { type: "thinking_delta", thinking: text };
    out.push(event({ type: "content_block_delta", index, delta: d }));
    return out;
  }
  function flushCalls(): SseMessage[] {
    const out = close();
    for (const call of calls.drain()) {
      calledTools = true;
      const block = {
        type: "tool_use",
        id: answerToolId(call.id, "toolu", ctx, call.index),
        name: names.toClient(call.name),
        input: {},
      };
      out.push(event({ type: "content_block_start", index, content_block: block }));
      const json = toolArgumentsText(call.args);
      outputChars += json.length;
      out.push(event({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: json } }));
      out.push(event({ type: "content_block_stop", index: index++ }));
    }
    return out;
  }
  function complete(): SseMessage[] {
    finished = true;

    const out = [...start(undefined), ...flushCalls()];
    const u = usageOrEstimate(usage, state, outputChars);
    out.push(event({
      type: "message_delta",
      delta: { stop_reason: stopWithCalls(finish, calledTools), stop_sequence: null },
      usage: anthropicUsage(u),
    }));
    out.push(event({ type: "message_stop" }));
    return out;
  }

  return {
    next(message) {
      if (finished) return [];
      const chunk = readChatDelta(message);
      if (chunk === "done") return complete();
      const out = start(chunk.id);
      if (chunk.usage) usage = chunk.usage;
      const d = chunk.message;
      if (d.reasoning) out.push(...delta("thinking", d.reasoning));
      if (d.content) out.push(...delta("text", d.content));
      calls.add(d.tool_calls);
      if (chunk.finish) {
        finish = chunk.finish;
        out.push(...flushCalls());
      }
      return out;
    },
    end() {
      if (finished) return [];
      // A finish_reason without [DONE] is a complete answer from servers that omit the sentinel.
      if (finish !== undefined) return complete();
      throw new GatewayError("upstream", "Upstream stream ended before the answer was complete");
    },
  };
}

/** Messages client -> OpenAI chat upstream. */
export function messagesViaChat(ctx: TranslateContext): Translation {
  const state: MessagesChatState = { ctx, names: toolNames(), promptTokens: 0 };
  return {
    request(body) {
      state.promptTokens = estimatePromptTokens(body);
      return messagesToChatRequest(body, state);
    },
    response: (body) => chatToMessagesResponse(body, state),
    stream: () => chatToMessagesStream(state),
  };
}

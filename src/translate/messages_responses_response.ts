/**
 * @module OpenAI Responses answer -> Anthropic Messages answer (see docs/protocols.md, "Anthropic Messages client,
 * Responses upstream"), the pieces its stream shares, and the Messages client's translator onto a Responses upstream.
 */
import { estimatePromptTokens } from "../core/estimate.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { usageFromResponses } from "../protocols/responses.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { messagesToResponsesRequest } from "./messages_responses_request.ts";
import { responsesToMessagesStream } from "./messages_responses_stream.ts";
import { reasoningBlock, reasoningRecovery } from "./responses_reasoning.ts";
import { answerToolId, anthropicUsage, parseToolArguments, type ToolNames, toolNames } from "./shared.ts";

/** Responses `incomplete_details.reason` -> Anthropic `stop_reason` (see docs/protocols.md, "Stop and finish reasons"). */
export const STOP_BY_INCOMPLETE: Record<string, string> = {
  max_output_tokens: "max_tokens",
  content_filter: "refusal",
};

/** The stop reason of a finished response: its incomplete reason, else a refusal, else a call, else the turn's end. */
export function stopOfResponse(response: JsonObject, called: boolean, refused: boolean): string {
  if (response.status === "incomplete") {
    const details = isObject(response.incomplete_details) ? response.incomplete_details : {};
    return STOP_BY_INCOMPLETE[String(details.reason)] ?? "end_turn";
  }
  if (refused) return "refusal";
  return called ? "tool_use" : "end_turn";
}

/** Per-request state the request, the answer and its stream share. */
export interface ResponsesAnswerState {
  ctx: TranslateContext;
  names: ToolNames;
  /** Estimated prompt tokens for `message_start`: the real count comes only with the response's end. */
  promptTokens: number;
  /** Tool calls given out so far, numbering the ids of calls the provider sent without one. */
  calls: number;
}

/** A function_call item as a tool_use block under the client's tool name. */
export function toolUseOf(item: JsonObject, state: ResponsesAnswerState): JsonObject {
  return {
    type: "tool_use",
    id: answerToolId(item.call_id, "toolu", state.ctx, state.calls++),
    name: state.names.toClient(String(item.name ?? "")),
    input: parseToolArguments(item.arguments),
  };
}

/** The text of a message item's part: `output_text`, or a `refusal`'s words. */
export function partText(part: unknown): { text: string; refusal: boolean } {
  if (!isObject(part)) return { text: "", refusal: false };
  if (part.type === "refusal") return { text: typeof part.refusal === "string" ? part.refusal : "", refusal: true };
  return { text: typeof part.text === "string" ? part.text : "", refusal: false };
}

/** The Anthropic `usage` of a response (cached input apart, reasoning inside output). */
export function usageOfResponse(response: JsonObject): JsonObject {
  return anthropicUsage(usageFromResponses(response.usage));
}

/** A whole Responses answer as an Anthropic message: its output items in order. */
export function responsesToMessagesResponse(body: JsonObject, state: ResponsesAnswerState): JsonObject {
  const content: JsonObject[] = [];
  let refused = false;
  let called = false;
  for (const item of Array.isArray(body.output) ? body.output.filter(isObject) : []) {
    if (item.type === "reasoning") {
      const block = reasoningBlock(item);
      if (block) content.push(block);
    } else if (item.type === "message") {
      for (const part of Array.isArray(item.content) ? item.content : []) {
        const { text, refusal } = partText(part);
        refused ||= refusal;
        if (text) content.push({ type: "text", text });
      }
    } else if (item.type === "function_call") {
      called = true;
      content.push(toolUseOf(item, state));
    }
  }
  return {
    id: typeof body.id === "string" && body.id ? body.id : `msg_${state.ctx.requestId}`,
    type: "message",
    role: "assistant",
    model: state.ctx.model,
    content,
    stop_reason: stopOfResponse(body, called, refused),
    stop_sequence: null,
    usage: usageOfResponse(body),
  };
}

/** Anthropic client -> Responses upstream; a refusal of reasoning another account made is sent once more without it. */
export function messagesViaResponses(ctx: TranslateContext): Translation {
  const state: ResponsesAnswerState = { ctx, names: toolNames(), promptTokens: 0, calls: 0 };
  const recovery = reasoningRecovery(ctx);
  return {
    request(body) {
      state.promptTokens = estimatePromptTokens(body);
      return recovery.sent(messagesToResponsesRequest(body, ctx, state.names));
    },
    response: (body) => responsesToMessagesResponse(body, state),
    stream: () => responsesToMessagesStream(state),
    recover: recovery.recover,
  };
}

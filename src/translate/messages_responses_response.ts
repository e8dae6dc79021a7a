/**
 * @module OpenAI Responses answer -> Anthropic Messages answer (see docs/protocols.md, "Anthropic Messages client,
 * Responses upstream"), and the Messages client's translator onto a Responses upstream.
 */
import { estimatePromptTokens } from "../core/estimate.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import {
  partText,
  type ResponsesAnswerState,
  stopOfResponse,
  toolUseOf,
  usageOfResponse,
} from "./messages_responses_parts.ts";
import { messagesToResponsesRequest } from "./messages_responses_request.ts";
import { responsesToMessagesStream } from "./messages_responses_stream.ts";
import { reasoningBlock, reasoningRecovery } from "./responses_reasoning.ts";
import { toolNames } from "./shared.ts";

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

/**
 * @module What a Responses upstream's answer says in Anthropic Messages terms, whole or streamed alike (see
 * docs/protocols.md, "Anthropic Messages client, Responses upstream"): the stop reason, a text part, a call as a
 * tool_use block, the usage, and the state one translation's request, answer and stream share.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { usageFromResponses } from "../protocols/responses.ts";
import type { TranslateContext } from "./identity.ts";
import { answerToolId, anthropicUsage, parseToolArguments, type ToolNames } from "./shared.ts";

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

/**
 * @module Anthropic Messages answers -> OpenAI Responses answers, whole and streamed (thinking sealed into reasoning
 * items), and the Responses client's translator onto an Anthropic upstream.
 */
import type { StreamStep } from "../core/sse.ts";
import type { JsonObject } from "../core/types.ts";
import { NO_USAGE, type TokenCounts } from "../core/usage.ts";
import {
  mergeAnthropicUsage,
  readAnthropicEvent,
  readAnthropicMessage,
  usageFromAnthropic,
} from "../protocols/anthropic.ts";
import { freeformInput } from "./freeform_tools.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { responsesToMessagesRequest } from "./responses_messages_request.ts";
import { sealThinking } from "./responses_reasoning.ts";
import { type ResponsesState, responsesTools } from "./responses_tools.ts";
import { cutShort, endFromStop, responsesWriter, writeCall } from "./responses_writer.ts";
import { answerToolId } from "./shared.ts";

/** A non-streamed Anthropic message as a Responses object; thinking is sealed into `encrypted_content`. */
export function messagesToResponsesResponse(body: JsonObject, state: ResponsesState): JsonObject {
  const writer = responsesWriter(state.ctx);
  const answer = readAnthropicMessage(body);
  let calls = 0;
  for (const block of answer.content) {
    if (block.type === "thinking") {
      if (block.thinking) writer.reasoning(String(block.thinking));
      writer.reasoningSealed(sealThinking(block));
    } else if (block.type === "redacted_thinking") writer.reasoningSealed(sealThinking(block));
    else if (block.type === "text" && block.text) writer.text(String(block.text));
    else if (block.type === "tool_use") {
      const id = answerToolId(block.id, "call", state.ctx, calls++);
      writeCall(writer, { id, name: String(block.name), args: block.input ?? {} }, state);
    }
  }
  writer.finish(endFromStop(answer.stop_reason), usageFromAnthropic(answer.usage));
  return writer.response();
}

/**
 * Anthropic events -> Responses events; each thinking block becomes a reasoning item sealed with its signature. A
 * function call's arguments stream as they come; a freeform call's raw input can only be read out of its function
 * form once the block is complete, so it is sent in one piece when the block stops.
 */
export function messagesToResponsesStream(state: ResponsesState): StreamStep {
  const writer = responsesWriter(state.ctx);
  let finished = false;
  let stop: unknown;
  let usage: TokenCounts = NO_USAGE;
  let thinking: { thinking: string; signature: string } | undefined;
  let freeform: string | undefined;
  let calls = 0;

  return {
    next(message) {
      if (finished) return [];
      const data = readAnthropicEvent(message);
      switch (data.type) {
        case "message_start":
          usage = usageFromAnthropic(data.message.usage);
          return writer.start();
        case "content_block_start": {
          const block = data.content_block;
          if (block.type === "thinking") thinking = { thinking: "", signature: "" };
          if (block.type === "redacted_thinking") return writer.reasoningSealed(sealThinking(block));
          if (block.type === "tool_use") {
            const tool = state.tools.clientTool(String(block.name));
            if (tool.custom) freeform = "";
            return writer.callStart(answerToolId(block.id, "call", state.ctx, calls++), tool);
          }
          return [];
        }
        case "content_block_delta": {
          const { delta } = data;
          if (delta.type === "text_delta") return delta.text ? writer.text(delta.text) : [];
          if (delta.type === "input_json_delta" && freeform !== undefined) {
            freeform += delta.partial_json;
            return [];
          }
          if (delta.type === "input_json_delta") return writer.callArguments(delta.partial_json);
          if (delta.type === "thinking_delta" && thinking) {
            thinking.thinking += delta.thinking;
            return delta.thinking ? writer.reasoning(delta.thinking) : [];
          }
          if (delta.type === "signature_delta" && thinking) thinking.signature += delta.signature;
          return [];
        }
        case "content_block_stop": {
          if (freeform !== undefined) {
            const input = freeformInput(freeform || "{}");
            freeform = undefined;
            return [...writer.callArguments(input), ...writer.close()];
          }
          if (!thinking) return writer.close();
          const sealed = sealThinking({ type: "thinking", ...thinking });
          thinking = undefined;
          return writer.reasoningSealed(sealed);
        }
        case "message_delta":
          if (data.stop_reason) stop = data.stop_reason;
          usage = mergeAnthropicUsage(usage, data.usage);
          return [];
        case "message_stop":
          finished = true;
          return writer.finish(endFromStop(stop), usage);
        default:
          return [];
      }
    },
    end() {
      if (finished) return [];
      throw cutShort();
    },
    fail: (err) => writer.fail(err),
  };
}

/** Responses client -> Anthropic upstream. */
export function responsesViaMessages(ctx: TranslateContext): Translation {
  const state: ResponsesState = { ctx, tools: responsesTools([], ctx) };
  return {
    request(body) {
      state.tools = responsesTools(body.tools, ctx);
      return responsesToMessagesRequest(body, state);
    },
    response: (body) => messagesToResponsesResponse(body, state),
    stream: () => messagesToResponsesStream(state),
  };
}

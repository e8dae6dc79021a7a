/**
 * @module Chat Completions or Anthropic Messages answers -> OpenAI Responses answers, non-streamed and streamed,
 * and the two Responses translators (client Responses -> chat upstream, client Responses -> Anthropic upstream).
 */
import { GatewayError } from "../core/errors.ts";
import type { StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { NO_USAGE, type TokenCounts } from "../core/usage.ts";
import {
  mergeAnthropicUsage,
  readAnthropicEvent,
  readAnthropicMessage,
  usageFromAnthropic,
} from "../protocols/anthropic.ts";
import { readChatCompletion, readChatDelta, usageFromChat } from "../protocols/chat.ts";
import { toolCallBuffer } from "./chat_tool_calls.ts";
import { freeformInput } from "./freeform_tools.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { responsesToChatRequest, responsesToMessagesRequest, sealThinking } from "./responses_messages_request.ts";
import { type ResponsesState, responsesTools } from "./responses_tools.ts";
import { type ResponsesEnd, type ResponsesWriter, responsesWriter } from "./responses_writer.ts";
import { answerToolId, finishFromStop, toolArgumentsText } from "./shared.ts";

function endFromFinish(finish: unknown): ResponsesEnd {
  if (finish === "length") return "max_output_tokens";
  return finish === "content_filter" ? "content_filter" : "completed";
}

/** Through the chat finish reason, so the stop-reason table stays in one place (shared.ts). */
function endFromStop(stop: unknown): ResponsesEnd {
  return endFromFinish(finishFromStop(stop));
}

/**
 * One whole tool call from the upstream, under the client's tool: a function call with its arguments, or a freeform
 * call whose raw input is read out of the function form (or taken as it is from a native `custom` call).
 */
function writeCall(
  writer: ResponsesWriter,
  call: { id: string; name: string; args: unknown; native?: boolean },
  { tools }: ResponsesState,
) {
  const client = tools.clientTool(call.name);
  const tool = call.native ? { ...client, custom: true } : client;
  let text: string;
  if (call.native) text = String(call.args ?? "");
  else if (tool.custom) text = freeformInput(call.args);
  else text = typeof call.args === "string" ? toolArgumentsText(call.args) : JSON.stringify(call.args ?? {});
  return [...writer.callStart(call.id, tool), ...writer.callArguments(text)];
}

/** A non-streamed chat completion as a Responses object. */
export function chatToResponsesResponse(body: JsonObject, state: ResponsesState): JsonObject {
  const writer = responsesWriter(state.ctx);
  const { message, finish, usage } = readChatCompletion(body);
  if (message.reasoning) writer.reasoning(message.reasoning);
  if (message.content) writer.text(message.content);
  message.tool_calls.forEach((call, i) => {
    const native = call.type === "custom" && isObject(call.custom);
    const fn = native ? call.custom as JsonObject : isObject(call.function) ? call.function : {};
    const id = answerToolId(call.id, "call", state.ctx, i);
    writeCall(writer, { id, name: String(fn.name ?? ""), args: native ? fn.input : fn.arguments ?? "", native }, state);
  });
  writer.finish(endFromFinish(finish), usageFromChat(usage));
  return writer.response();
}

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

function cutShort(): GatewayError {
  return new GatewayError("upstream", "Upstream stream ended before the answer was complete");
}

/** Chat chunks -> Responses events; tool calls are buffered and emitted whole once the upstream finishes them. */
export function chatToResponsesStream(state: ResponsesState): StreamStep {
  const { ctx } = state;
  const writer = responsesWriter(ctx);
  const calls = toolCallBuffer();
  let finished = false;
  let finish: unknown;
  let usage: TokenCounts = NO_USAGE;

  function flush(w: ResponsesWriter) {
    const out = w.close();
    for (const call of calls.drain()) {
      const id = answerToolId(call.id, "call", ctx, call.index);
      out.push(...writeCall(w, { id, name: call.name, args: call.args, native: call.custom }, state));
    }
    return out;
  }
  function complete() {
    finished = true;
    return [...flush(writer), ...writer.finish(endFromFinish(finish), usage)];
  }
  return {
    next(message) {
      if (finished) return [];
      const chunk = readChatDelta(message);
      if (chunk === "done") return complete();
      const out = writer.start();
      if (chunk.usage) usage = usageFromChat(chunk.usage);
      const delta = chunk.message;
      if (delta.reasoning) out.push(...writer.reasoning(delta.reasoning));
      if (delta.content) out.push(...writer.text(delta.content));
      calls.add(delta.tool_calls);
      if (chunk.finish) {
        finish = chunk.finish;
        out.push(...flush(writer));
      }
      return out;
    },
    end() {
      if (finished) return [];
      if (finish !== undefined) return complete();
      throw cutShort();
    },
    fail: (err) => writer.fail(err),
  };
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

/** Responses client -> OpenAI chat upstream; freeform tools go natively when the upstream takes them. */
export function responsesViaChat(ctx: TranslateContext): Translation {
  const state: ResponsesState = { ctx, tools: responsesTools([], ctx) };
  return {
    request(body) {
      state.tools = responsesTools(body.tools, ctx, ctx.nativeCustomTools === true);
      return responsesToChatRequest(body, state);
    },
    response: (body) => chatToResponsesResponse(body, state),
    stream: () => chatToResponsesStream(state),
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

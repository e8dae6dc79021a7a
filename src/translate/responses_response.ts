/**
 * @module Chat Completions or Anthropic Messages answers -> OpenAI Responses answers, non-streamed and streamed,
 * and the two Responses translators (client Responses -> chat upstream, client Responses -> Anthropic upstream).
 */
import { GatewayError } from "../core/errors.ts";
import type { StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { mergeAnthropicUsage, NO_USAGE, type TokenCounts, usageFromAnthropic, usageFromChat } from "../core/usage.ts";
import { freeformInput } from "./freeform_tools.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { reasoningOf } from "./messages_chat_response.ts";
import { responsesToChatRequest, responsesToMessagesRequest, sealThinking } from "./responses_request.ts";
import { type ResponsesState, responsesTools } from "./responses_tools.ts";
import { type ResponsesEnd, type ResponsesWriter, responsesWriter } from "./responses_writer.ts";
import { answerToolId, finishFromStop, toolArgumentsText } from "./shared.ts";
import { readAnthropicEvent, readChatDelta, toolCallBuffer } from "./upstream_events.ts";

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
  const choice = Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const reasoning = reasoningOf(message);
  if (reasoning) writer.reasoning(reasoning);
  if (typeof message.content === "string" && message.content) writer.text(message.content);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
  calls.forEach((call, i) => {
    const native = call.type === "custom" && isObject(call.custom);
    const fn = native ? call.custom as JsonObject : isObject(call.function) ? call.function : {};
    const id = answerToolId(call.id, "call", state.ctx, i);
    writeCall(writer, { id, name: String(fn.name ?? ""), args: native ? fn.input : fn.arguments ?? "", native }, state);
  });
  writer.finish(endFromFinish(choice.finish_reason), usageFromChat(body.usage));
  return writer.response();
}

/** A non-streamed Anthropic message as a Responses object; thinking is sealed into `encrypted_content`. */
export function messagesToResponsesResponse(body: JsonObject, state: ResponsesState): JsonObject {
  const writer = responsesWriter(state.ctx);
  let calls = 0;
  for (const block of Array.isArray(body.content) ? body.content.filter(isObject) : []) {
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
  writer.finish(endFromStop(body.stop_reason), usageFromAnthropic(body.usage));
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
      const delta = chunk.delta;
      const reasoning = reasoningOf(delta);
      if (reasoning) out.push(...writer.reasoning(reasoning));
      if (typeof delta.content === "string" && delta.content) out.push(...writer.text(delta.content));
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
      const block = isObject(data.content_block) ? data.content_block : {};
      const delta = isObject(data.delta) ? data.delta : {};
      switch (data.type) {
        case "message_start":
          usage = usageFromAnthropic(isObject(data.message) ? data.message.usage : undefined);
          return writer.start();
        case "content_block_start":
          if (block.type === "thinking") thinking = { thinking: "", signature: "" };
          if (block.type === "redacted_thinking") return writer.reasoningSealed(sealThinking(block));
          if (block.type === "tool_use") {
            const tool = state.tools.clientTool(String(block.name));
            if (tool.custom) freeform = "";
            return writer.callStart(answerToolId(block.id, "call", state.ctx, calls++), tool);
          }
          return [];
        case "content_block_delta":
          if (delta.type === "text_delta" && delta.text) return writer.text(String(delta.text));
          if (delta.type === "input_json_delta" && freeform !== undefined) {
            freeform += String(delta.partial_json ?? "");
            return [];
          }
          if (delta.type === "input_json_delta") return writer.callArguments(String(delta.partial_json ?? ""));
          if (delta.type === "thinking_delta" && thinking) {
            thinking.thinking += String(delta.thinking ?? "");
            return delta.thinking ? writer.reasoning(String(delta.thinking)) : [];
          }
          if (delta.type === "signature_delta" && thinking) thinking.signature += String(delta.signature ?? "");
          return [];
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
          if (isObject(data.delta) && data.delta.stop_reason) stop = data.delta.stop_reason;
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

/**
 * @module Chat Completions or Anthropic Messages answers -> OpenAI Responses answers, non-streamed and streamed,
 * and the two Responses translators (client Responses -> chat upstream, client Responses -> Anthropic upstream).
 */
import { GatewayError } from "../core/errors.ts";
import type { StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { reasoningOf } from "./messages_chat_response.ts";
import { responsesToChatRequest, responsesToMessagesRequest, sealThinking } from "./responses_request.ts";
import { type ResponsesEnd, type ResponsesWriter, responsesWriter } from "./responses_writer.ts";
import {
  finishFromStop,
  mergeAnthropicUsage,
  NO_USAGE,
  type Usage,
  usageFromAnthropic,
  usageFromChat,
} from "./shared.ts";
import { readAnthropicEvent, readChatDelta, toolCallBuffer } from "./upstream_events.ts";

function endFromFinish(finish: unknown): ResponsesEnd {
  if (finish === "length") return "max_output_tokens";
  return finish === "content_filter" ? "content_filter" : "completed";
}

/** Through the chat finish reason, so the stop-reason table stays in one place (shared.ts). */
function endFromStop(stop: unknown): ResponsesEnd {
  return endFromFinish(finishFromStop(stop));
}

/** A non-streamed chat completion as a Responses object. */
export function chatToResponsesResponse(body: JsonObject, ctx: TranslateContext): JsonObject {
  const writer = responsesWriter(ctx);
  const choice = Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const reasoning = reasoningOf(message);
  if (reasoning) writer.reasoning(reasoning);
  if (typeof message.content === "string" && message.content) writer.text(message.content);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
  calls.forEach((call, i) => {
    const fn = isObject(call.function) ? call.function : {};
    writer.callStart(typeof call.id === "string" && call.id ? call.id : `call_${i}`, String(fn.name ?? ""));
    writer.callArguments(typeof fn.arguments === "string" ? fn.arguments : "");
  });
  writer.finish(endFromFinish(choice.finish_reason), usageFromChat(body.usage));
  return writer.response();
}

/** A non-streamed Anthropic message as a Responses object; thinking is sealed into `encrypted_content`. */
export function messagesToResponsesResponse(body: JsonObject, ctx: TranslateContext): JsonObject {
  const writer = responsesWriter(ctx);
  for (const block of Array.isArray(body.content) ? body.content.filter(isObject) : []) {
    if (block.type === "thinking") {
      if (block.thinking) writer.reasoning(String(block.thinking));
      writer.reasoningSealed(sealThinking(block));
    } else if (block.type === "redacted_thinking") writer.reasoningSealed(sealThinking(block));
    else if (block.type === "text" && block.text) writer.text(String(block.text));
    else if (block.type === "tool_use") {
      writer.callStart(String(block.id), String(block.name));
      writer.callArguments(JSON.stringify(block.input ?? {}));
    }
  }
  writer.finish(endFromStop(body.stop_reason), usageFromAnthropic(body.usage));
  return writer.response();
}

function cutShort(): GatewayError {
  return new GatewayError("upstream", "Upstream stream ended before the answer was complete");
}

/** Chat chunks -> Responses events; tool calls are buffered and emitted whole once the upstream finishes them. */
export function chatToResponsesStream(ctx: TranslateContext): StreamStep {
  const writer = responsesWriter(ctx);
  const calls = toolCallBuffer();
  let finished = false;
  let finish: unknown;
  let usage: Usage = NO_USAGE;

  function flush(w: ResponsesWriter) {
    const out = w.close();
    for (const call of calls.drain()) {
      out.push(...w.callStart(call.id || `call_${ctx.requestId}_${call.index}`, call.name));
      out.push(...w.callArguments(call.args));
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

/** Anthropic events -> Responses events; each thinking block becomes a reasoning item sealed with its signature. */
export function messagesToResponsesStream(ctx: TranslateContext): StreamStep {
  const writer = responsesWriter(ctx);
  let finished = false;
  let stop: unknown;
  let usage: Usage = NO_USAGE;
  let thinking: { thinking: string; signature: string } | undefined;

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
          if (block.type === "tool_use") return writer.callStart(String(block.id), String(block.name));
          return [];
        case "content_block_delta":
          if (delta.type === "text_delta" && delta.text) return writer.text(String(delta.text));
          if (delta.type === "input_json_delta") return writer.callArguments(String(delta.partial_json ?? ""));
          if (delta.type === "thinking_delta" && thinking) {
            thinking.thinking += String(delta.thinking ?? "");
            return delta.thinking ? writer.reasoning(String(delta.thinking)) : [];
          }
          if (delta.type === "signature_delta" && thinking) thinking.signature += String(delta.signature ?? "");
          return [];
        case "content_block_stop": {
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

/** Responses client -> OpenAI chat upstream. */
export function responsesViaChat(ctx: TranslateContext): Translation {
  return {
    request: (body) => responsesToChatRequest(body, ctx),
    response: (body) => chatToResponsesResponse(body, ctx),
    stream: () => chatToResponsesStream(ctx),
  };
}

/** Responses client -> Anthropic upstream. */
export function responsesViaMessages(ctx: TranslateContext): Translation {
  return {
    request: (body) => responsesToMessagesRequest(body, ctx),
    response: (body) => messagesToResponsesResponse(body, ctx),
    stream: () => messagesToResponsesStream(ctx),
  };
}

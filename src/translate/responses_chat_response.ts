/**
 * @module Chat Completions answers -> OpenAI Responses answers, whole and streamed (tool calls put back together from
 * their fragments), and the Responses client's translator onto a chat upstream.
 */
import type { StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { NO_USAGE, type TokenCounts } from "../core/usage.ts";
import { readChatCompletion, readChatDelta, usageFromChat } from "../protocols/chat.ts";
import { toolCallBuffer } from "./chat_tool_calls.ts";
import type { TranslateContext, Translation } from "./identity.ts";
import { responsesToChatRequest } from "./responses_chat_request.ts";
import { type ResponsesState, responsesTools } from "./responses_tools.ts";
import { cutShort, endFromFinish, type ResponsesWriter, responsesWriter, writeCall } from "./responses_writer.ts";
import { answerToolId } from "./shared.ts";

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

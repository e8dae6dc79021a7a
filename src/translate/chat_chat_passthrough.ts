/**
 * @module Chat Completions passthrough that still counts tokens: a streamed request that did not ask for usage
 * gets `stream_options.include_usage` on its way up (without it an OpenAI-compatible upstream reports none), and
 * the usage-only chunk this adds is kept from the client, which did not ask for it. Everything else passes as is.
 */
import type { SseMessage, StreamStep } from "../core/sse.ts";
import { isObject } from "../core/types.ts";
import { identity, type TranslateContext, type Translation } from "./identity.ts";

/** True for the `choices: []` chunk that carries only usage. */
function usageOnly(message: SseMessage): boolean {
  if (!message.data.includes('"choices":[]')) return false;
  try {
    const chunk = JSON.parse(message.data);
    return isObject(chunk) && Array.isArray(chunk.choices) && chunk.choices.length === 0;
  } catch {
    return false;
  }
}

/** Drops the usage-only chunk; whether the stream ended or was cut is the relay's call (relay/stream.ts). */
function hideUsageChunk(): StreamStep {
  return {
    next: (message) => usageOnly(message) ? [] : [message],
    end: () => [],
  };
}

/** The chat-to-chat translation: identity, plus usage for streams that did not ask for it. */
export function chatPassthrough(ctx: TranslateContext): Translation {
  const base = identity(ctx);
  let hidden = false;
  return {
    request(body) {
      const upstream = base.request(body);
      const options = isObject(body.stream_options) ? body.stream_options : undefined;
      if (body.stream !== true || options?.include_usage === true) return upstream;
      hidden = true;
      return { ...upstream, stream_options: { ...options, include_usage: true } };
    },
    response: base.response,
    // Only a request that had usage added needs its stream filtered; the rest are relayed byte for byte.
    get stream() {
      return hidden ? hideUsageChunk : undefined;
    },
  };
}

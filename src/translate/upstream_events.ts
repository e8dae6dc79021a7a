/**
 * @module Reading upstream stream events for translators: chat chunks, Anthropic and Responses events as JSON, and the
 * upstream's in-band errors (as core/upstream_error.ts decides them) as GatewayErrors, so the client gets its own
 * protocol's error event.
 */
import { GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { upstreamStreamError } from "../core/upstream_error.ts";

/** Parses one event's JSON payload; anything else means the upstream stream is broken. */
function parsePayload(message: SseMessage): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(message.data);
  } catch {
    throw new GatewayError("upstream", "Upstream sent an event that is not JSON");
  }
  if (!isObject(value)) throw new GatewayError("upstream", "Upstream sent an event that is not a JSON object");
  return value;
}

/** A chat chunk, or "done" for the `[DONE]` sentinel. */
export function readChunk(message: SseMessage): JsonObject | "done" {
  if (message.data.trim() === "[DONE]") return "done";
  return parsePayload(message);
}

/** Throws the upstream's in-band error, when `message` is one, as the GatewayError of its kind. */
function throwIfError(message: SseMessage): void {
  const error = upstreamStreamError(message, "Upstream failed during the stream");
  if (error) throw error;
}

/** An Anthropic stream event; an `error` event is thrown as the GatewayError it stands for. */
export function readAnthropicEvent(message: SseMessage): JsonObject {
  throwIfError(message);
  return parsePayload(message);
}

/** A Gemini stream chunk; a `{"error": ...}` event is thrown as the GatewayError it stands for. */
export function readGeminiChunk(message: SseMessage): JsonObject {
  throwIfError(message);
  return parsePayload(message);
}

/**
 * A Responses API stream event, or undefined for a `[DONE]` some servers add; an `error` event or `response.failed`
 * is thrown as the GatewayError it stands for.
 */
export function readResponsesEvent(message: SseMessage): JsonObject | undefined {
  throwIfError(message);
  return message.data.trim() === "[DONE]" ? undefined : parsePayload(message);
}

/** The end of a translation of an Anthropic stream: nothing more when `message_stop` came, else the cut is an error. */
export function endAnthropicStream(stopped: boolean): SseMessage[] {
  if (stopped) return [];
  throw new GatewayError("upstream", "Upstream stream ended before message_stop");
}

/** A streamed chat tool call, assembled from its fragments. */
export interface BufferedCall {
  index: number;
  id: string;
  name: string;
  /** Arguments of a function call, or the raw input of a `custom` call. */
  args: string;
  /** A call to a freeform tool in the chat API's own `custom` shape. */
  custom: boolean;
}

/** Collects chat tool-call fragments per index; upstreams may interleave indices or send the name late. */
export interface ToolCallBuffer {
  add(fragments: unknown): void;
  /** The complete calls in index order; the buffer is then empty. */
  drain(): BufferedCall[];
}

/** A fresh tool-call buffer. */
export function toolCallBuffer(): ToolCallBuffer {
  const calls = new Map<number, BufferedCall>();
  return {
    add(fragments) {
      if (!Array.isArray(fragments)) return;
      for (const tc of fragments.filter(isObject)) {
        const index = typeof tc.index === "number" ? tc.index : calls.size;
        const call = calls.get(index) ?? { index, id: "", name: "", args: "", custom: false };
        if (tc.type === "custom" || isObject(tc.custom)) call.custom = true;
        const fn = isObject(tc.custom) ? tc.custom : isObject(tc.function) ? tc.function : {};
        if (typeof tc.id === "string" && tc.id) call.id = tc.id;
        if (typeof fn.name === "string" && fn.name) call.name = fn.name;
        const args = fn.input ?? fn.arguments;
        if (typeof args === "string") call.args += args;
        calls.set(index, call);
      }
    },
    drain() {
      const out = [...calls.values()].sort((a, b) => a.index - b.index);
      calls.clear();
      return out;
    },
  };
}

/** What one chat chunk says: its id, usage if any, and the first choice's delta and finish reason. */
export interface ChatDelta {
  id: unknown;
  usage?: JsonObject;
  delta: JsonObject;
  finish?: unknown;
}

/** Reads one chat chunk; "done" for `[DONE]`, and an in-band error is thrown as a GatewayError. */
export function readChatDelta(message: SseMessage): ChatDelta | "done" {
  throwIfError(message);
  const chunk = readChunk(message);
  if (chunk === "done") return chunk;
  const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : {};
  return {
    id: chunk.id,
    usage: isObject(chunk.usage) ? chunk.usage : undefined,
    delta: isObject(choice.delta) ? choice.delta : {},
    finish: choice.finish_reason ?? undefined,
  };
}

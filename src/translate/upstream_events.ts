/**
 * @module Reading upstream stream events for translators: chat chunks and Anthropic events as JSON, and the
 * upstream's in-band errors as GatewayErrors so the client gets its own protocol's error event.
 */
import { type ErrorKind, GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";

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

/** Anthropic error types -> kinds (see docs/protocols.md, "Errors"). */
const KIND_BY_ANTHROPIC_TYPE: Record<string, ErrorKind> = {
  invalid_request_error: "invalid_request",
  not_found_error: "not_found",
  request_too_large: "request_too_large",
  rate_limit_error: "rate_limit",
  overloaded_error: "overloaded",
  timeout_error: "timeout",
  api_error: "upstream",
};

/** OpenAI error types and codes -> kinds (see docs/protocols.md, "Errors"). */
const KIND_BY_OPENAI_CODE: Record<string, ErrorKind> = {
  rate_limit_exceeded: "rate_limit",
  rate_limit_error: "rate_limit",
  insufficient_quota: "rate_limit",
  context_length_exceeded: "invalid_request",
  invalid_request_error: "invalid_request",
  overloaded: "overloaded",
};

function errorMessage(error: JsonObject): string {
  return typeof error.message === "string" && error.message ? error.message : "Upstream failed during the stream";
}

/** The in-band error a chat chunk carries (`{"error":{…}}`), if any. */
export function chatChunkError(chunk: JsonObject): GatewayError | undefined {
  if (!isObject(chunk.error)) return undefined;
  const error = chunk.error;
  const kind = KIND_BY_OPENAI_CODE[String(error.code)] ?? KIND_BY_OPENAI_CODE[String(error.type)] ?? "upstream";
  return new GatewayError(kind, errorMessage(error));
}

/** An Anthropic stream event; an `error` event is thrown as the GatewayError it stands for. */
export function readAnthropicEvent(message: SseMessage): JsonObject {
  const data = parsePayload(message);
  if (data.type === "error") {
    const error = isObject(data.error) ? data.error : {};
    throw new GatewayError(KIND_BY_ANTHROPIC_TYPE[String(error.type)] ?? "upstream", errorMessage(error));
  }
  return data;
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
  const chunk = readChunk(message);
  if (chunk === "done") return chunk;
  const err = chatChunkError(chunk);
  if (err) throw err;
  const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : {};
  return {
    id: chunk.id,
    usage: isObject(chunk.usage) ? chunk.usage : undefined,
    delta: isObject(choice.delta) ? choice.delta : {},
    finish: choice.finish_reason ?? undefined,
  };
}

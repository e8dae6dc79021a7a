/**
 * @module Anthropic Messages on the wire (see docs/protocols.md, "Anthropic Messages"): the bodies its clients send,
 * what an answer is, its error body and error event, its usage, and its stream's events as translators read them.
 */
import { z } from "zod";
import { byteMarker, markerSet } from "../core/byte_search.ts";
import { clientMessage, type ErrorKind, GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { tokenCount, type TokenCounts } from "../core/usage.ts";
import {
  eventPayload,
  everyItem,
  hasTypedError,
  isCount,
  namesModel,
  optionalFlag,
  type StreamingProtocol,
  textOf,
  throwIfError,
} from "./wire.ts";

const Message = z.looseObject({ role: z.string(), content: z.unknown().refine((v) => v !== undefined, "is required") });

const MessagesBody = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z.array(Message).min(1),
  stream: z.boolean().optional(),
});

const isMessage = (m: JsonObject) => typeof m.role === "string" && m.content !== undefined;

/** Anthropic's error `type` per kind (see docs/protocols.md, "Errors"). */
const ERROR_TYPE: Record<ErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  permission: "permission_error",
  not_found: "not_found_error",
  request_too_large: "request_too_large",
  request_timeout: "timeout_error",
  rate_limit: "rate_limit_error",
  overloaded: "overloaded_error",
  timeout: "timeout_error",
  upstream: "api_error",
  unavailable: "api_error",
  internal: "api_error",
  client_closed: "api_error",
};

/** Reads an Anthropic `usage` (input is already net of cache). */
export function usageFromAnthropic(usage: unknown): TokenCounts {
  const u = isObject(usage) ? usage : {};
  return {
    input: tokenCount(u.input_tokens),
    output: tokenCount(u.output_tokens),
    cacheRead: tokenCount(u.cache_read_input_tokens),
    cacheWrite: tokenCount(u.cache_creation_input_tokens),
    reasoning: 0,
  };
}

/** Anthropic stream usage is cumulative: the fields a `message_delta` carries replace earlier values. */
export function mergeAnthropicUsage(previous: TokenCounts, usage: unknown): TokenCounts {
  if (!isObject(usage)) return previous;
  const late = usageFromAnthropic(usage);
  return {
    input: "input_tokens" in usage ? late.input : previous.input,
    output: "output_tokens" in usage ? late.output : previous.output,
    cacheRead: "cache_read_input_tokens" in usage ? late.cacheRead : previous.cacheRead,
    cacheWrite: "cache_creation_input_tokens" in usage ? late.cacheWrite : previous.cacheWrite,
    reasoning: previous.reasoning,
  };
}

/** A whole Anthropic message as translators read it: its content blocks (the objects among them), checked once. */
export interface AnthropicMessage {
  id?: string;
  content: JsonObject[];
  stop_reason: unknown;
  usage: unknown;
}

/** Reads a whole (non-streamed) Anthropic message. */
export function readAnthropicMessage(body: JsonObject): AnthropicMessage {
  return {
    id: typeof body.id === "string" ? body.id : undefined,
    content: Array.isArray(body.content) ? body.content.filter(isObject) : [],
    stop_reason: body.stop_reason,
    usage: body.usage,
  };
}

/** What a content block's delta adds: text, thinking, a tool call's input JSON, or a thinking block's signature. */
export type AnthropicDelta =
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; thinking: string }
  | { type: "input_json_delta"; partial_json: string }
  | { type: "signature_delta"; signature: string }
  | { type: "other" };

/** An Anthropic stream event, checked once: the kinds translators act on, every other as `other`. */
export type AnthropicEvent =
  | { type: "message_start"; message: { id?: string; usage?: JsonObject } }
  | { type: "content_block_start"; index: number; content_block: JsonObject }
  | { type: "content_block_delta"; index: number; delta: AnthropicDelta }
  | { type: "content_block_stop"; index: number }
  | { type: "message_delta"; stop_reason: unknown; usage?: JsonObject }
  | { type: "message_stop" }
  | { type: "other" };

function deltaOf(value: unknown): AnthropicDelta {
  const d = isObject(value) ? value : {};
  switch (d.type) {
    case "text_delta":
      return { type: d.type, text: textOf(d.text) };
    case "thinking_delta":
      return { type: d.type, thinking: textOf(d.thinking) };
    case "input_json_delta":
      return { type: d.type, partial_json: textOf(d.partial_json) };
    case "signature_delta":
      return { type: d.type, signature: textOf(d.signature) };
    default:
      return { type: "other" };
  }
}

/** An Anthropic stream event; an `error` event is thrown as the GatewayError it stands for. */
export function readAnthropicEvent(message: SseMessage): AnthropicEvent {
  throwIfError(message);
  const data = eventPayload(message);
  const usage = isObject(data.usage) ? data.usage : undefined;
  switch (data.type) {
    case "message_start": {
      const start = isObject(data.message) ? data.message : {};
      const id = typeof start.id === "string" ? start.id : undefined;
      return { type: data.type, message: { id, usage: isObject(start.usage) ? start.usage : undefined } };
    }
    case "content_block_start": {
      const block = isObject(data.content_block) ? data.content_block : {};
      return { type: data.type, index: Number(data.index), content_block: block };
    }
    case "content_block_delta":
      return { type: data.type, index: Number(data.index), delta: deltaOf(data.delta) };
    case "content_block_stop":
      return { type: data.type, index: Number(data.index) };
    case "message_delta":
      return { type: data.type, stop_reason: isObject(data.delta) ? data.delta.stop_reason : undefined, usage };
    case "message_stop":
      return { type: data.type };
    default:
      return { type: "other" };
  }
}

/** The end of a translation of an Anthropic stream: nothing more when `message_stop` came, else the cut is an error. */
export function endAnthropicStream(stopped: boolean): SseMessage[] {
  if (stopped) return [];
  throw new GatewayError("upstream", "Upstream stream ended before message_stop");
}

/** Anthropic's error body; it carries the request's id (see docs/protocols.md, "Anthropic Messages"). */
function errorBody(err: GatewayError, message: string, requestId?: string): JsonObject {
  const body: JsonObject = { type: "error", error: { type: ERROR_TYPE[err.kind], message } };
  if (requestId) body.request_id = requestId;
  return body;
}

const encoder = new TextEncoder();

/** Anthropic Messages: POST /v1/messages and /v1/messages/count_tokens. */
export const messagesProtocol: StreamingProtocol<AnthropicEvent> = {
  name: "anthropic",
  bodies: {
    generate: {
      schema: MessagesBody,
      accepts: (b) =>
        namesModel(b) && Number.isSafeInteger(b.max_tokens) && (b.max_tokens as number) > 0 &&
        everyItem(b.messages, isMessage) && optionalFlag(b.stream),
    },
    count_tokens: {
      schema: MessagesBody.omit({ max_tokens: true }),
      accepts: (b) => namesModel(b) && everyItem(b.messages, isMessage) && optionalFlag(b.stream),
    },
  },
  isAnswer: (body, operation) => operation === "count_tokens" ? isCount(body) : body.type === "message",
  errors: {
    body: errorBody,
    // 529 (overloaded) is Anthropic's own status, and its SDKs retry on it.
    status: (status) => status,
    keeps: (body) => body.type === "error" && hasTypedError(body),
  },
  usage: {
    read(body) {
      // A whole message, or a stream event that carries one (`message_start`) or a delta of it (`message_delta`).
      const message = isObject(body.message) ? body.message : body;
      const usage = isObject(message.usage) ? message.usage : body.usage;
      const reason = isObject(body.delta) ? body.delta.stop_reason : message.stop_reason;
      return { usage: isObject(usage) ? usage : undefined, id: message.id, model: message.model, reasons: [reason] };
    },
    // Later events overwrite earlier ones field by field, as the SDKs do.
    counts: (usage, previous) => previous ? mergeAnthropicUsage(previous, usage) : usageFromAnthropic(usage),
  },
  stream: {
    terminal: (m) => m.event === "message_stop" || (m.event === undefined && m.data.includes('"message_stop"')),
    finishing: () => false,
    markers: markerSet(["usage", "error", "message_stop", "response.failed"].map(byteMarker)),
    usage: /"usage"\s*:\s*\{/,
    // A ping event (see docs/protocols.md, "Server-sent events"): what Claude Code's idle watchdog waits for.
    keepAlive: encoder.encode('event: ping\ndata: {"type":"ping"}\n\n'),
    errorEvents: (err) => [{ event: "error", data: JSON.stringify(errorBody(err, clientMessage(err))) }],
    read: readAnthropicEvent,
  },
};

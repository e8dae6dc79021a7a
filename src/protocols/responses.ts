/**
 * @module OpenAI Responses on the wire (see docs/protocols.md, "OpenAI Responses" and "Responses streams"): the bodies
 * its clients send, what an answer is, its error body and error events, its usage, and what its stream is: the
 * events in their order, the ends that leave an answer to keep, and the events translators read.
 */
import { z } from "zod";
import { byteMarker, markerSet } from "../core/byte_search.ts";
import { clientMessage } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { tokenCount, type TokenCounts } from "../core/usage.ts";
import { openaiErrors } from "./openai.ts";
import {
  COMMENT_KEEP_ALIVE,
  eventPayload,
  isCount,
  namesModel,
  optionalFlag,
  type StreamingProtocol,
  throwIfError,
} from "./wire.ts";

const ResponsesBody = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.looseObject({}))]),
  stream: z.boolean().nullish(),
});

const responsesBody = {
  schema: ResponsesBody,
  accepts: (b: JsonObject) =>
    namesModel(b) && (typeof b.input === "string" || (Array.isArray(b.input) && b.input.every(isObject))) &&
    (b.stream === null || optionalFlag(b.stream)),
};

/**
 * Reads a Responses API `usage`: `input_tokens` includes the cached ones (`input_tokens_details.cached_tokens`), and
 * `output_tokens` includes the reasoning ones (`output_tokens_details.reasoning_tokens`).
 */
export function usageFromResponses(usage: unknown): TokenCounts {
  const u = isObject(usage) ? usage : {};
  const input = isObject(u.input_tokens_details) ? u.input_tokens_details : {};
  const output = isObject(u.output_tokens_details) ? u.output_tokens_details : {};
  const total = tokenCount(u.input_tokens);
  const cacheRead = Math.min(total, tokenCount(input.cached_tokens));
  return {
    input: total - cacheRead,
    output: tokenCount(u.output_tokens),
    cacheRead,
    cacheWrite: 0,
    reasoning: tokenCount(output.reasoning_tokens),
  };
}

/** The events that end a Responses stream with an answer to keep and continue from (`response.failed` is an error). */
const ENDS = new Set(["response.completed", "response.incomplete"]);
const END_TYPE = /^\{\s*"type"\s*:\s*"response\.(completed|incomplete)"/;

/**
 * True for a Responses stream's `response.completed` or `response.incomplete`, named by its `event:` line or, when a
 * provider leaves those lines out, by its payload's type. An event with a name is never made to write its data (see
 * core/sse.ts, `payload`).
 */
export function isResponsesEnd(message: SseMessage): boolean {
  if (message.event !== undefined) return ENDS.has(message.event);
  return END_TYPE.test(message.data.slice(0, 64));
}

/** What every Responses event may carry: the whole response (lifecycle events) and the output item it is about. */
interface EventBase {
  /** The response, on `response.created`, `response.in_progress` and the terminal events. */
  response?: JsonObject;
  /** The output item's index; -1 when the event names none. */
  output_index: number;
}

/** The kinds of Responses event translators act on; every other (`response.created`, `.added`, `.done`...) is `other`. */
type EventKind =
  | { type: "response.output_text.delta" | "response.refusal.delta"; delta: string }
  | { type: "response.reasoning_summary_text.delta"; delta: string; summary_index: unknown }
  | { type: "response.reasoning_text.delta"; delta: string; content_index: unknown }
  | { type: "response.output_item.done"; item?: JsonObject }
  | { type: "response.completed" | "response.incomplete" }
  | { type: "other" };

/** A Responses stream event, checked once: a text's delta ("" for none), an item, an end, or another. */
export type ResponsesEvent = EventBase & EventKind;

function kindOf(data: JsonObject, delta: string): EventKind {
  switch (data.type) {
    case "response.output_text.delta":
    case "response.refusal.delta":
      return { type: data.type, delta };
    case "response.reasoning_summary_text.delta":
      return { type: data.type, delta, summary_index: data.summary_index };
    case "response.reasoning_text.delta":
      return { type: data.type, delta, content_index: data.content_index };
    case "response.output_item.done":
      return { type: data.type, item: isObject(data.item) ? data.item : undefined };
    case "response.completed":
    case "response.incomplete":
      return { type: data.type };
    default:
      return { type: "other" };
  }
}

/**
 * A Responses API stream event, or undefined for a `[DONE]` some servers add; an `error` event or `response.failed`
 * is thrown as the GatewayError it stands for.
 */
export function readResponsesEvent(message: SseMessage): ResponsesEvent | undefined {
  throwIfError(message);
  if (message.data.trim() === "[DONE]") return undefined;
  const data = eventPayload(message);
  const base: EventBase = {
    response: isObject(data.response) ? data.response : undefined,
    output_index: typeof data.output_index === "number" ? data.output_index : -1,
  };
  const delta = typeof data.delta === "string" ? data.delta : "";
  return { ...base, ...kindOf(data, delta) };
}

/** OpenAI Responses: POST /v1/responses (and /v1/responses/compact, whose body is a create's). */
export const responsesProtocol: StreamingProtocol<ResponsesEvent | undefined> = {
  name: "openai-responses",
  bodies: { generate: responsesBody, compact: responsesBody },
  isAnswer: (body, operation) => operation === "count_tokens" ? isCount(body) : Array.isArray(body.output),
  errors: openaiErrors,
  usage: {
    read(body) {
      // A whole answer, or a lifecycle event that carries one; the usage is on the last.
      const response = isObject(body.response) ? body.response : body;
      const incomplete = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
      const usage = isObject(response.usage) ? response.usage : undefined;
      return { usage, id: response.id, model: response.model, reasons: [incomplete ?? response.status] };
    },
    counts: (usage) => usageFromResponses(usage),
  },
  stream: {
    terminal: isResponsesEnd,
    finishing: () => false,
    // Every lifecycle event holds `"usage": null` and `"error": null`; only the ends and errors can change the meter.
    markers: markerSet(
      ["response.completed", "response.incomplete", "response.failed", "event: error", '"type":"error"'].map(
        byteMarker,
      ),
    ),
    usage: /"usage"\s*:\s*\{/,
    keepAlive: COMMENT_KEEP_ALIVE,
    // The error event's own type is "error"; the kind travels in `code`.
    errorEvents(err) {
      const { message, param, code, type } = openaiErrors.body(err, clientMessage(err)).error as JsonObject;
      return [{ event: "error", data: JSON.stringify({ type: "error", code: code ?? type, message, param }) }];
    },
    read: readResponsesEvent,
  },
};

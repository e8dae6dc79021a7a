/**
 * @module Whether an upstream's stream event is the upstream's own error, and what it means: one decision shared by
 * the relay (an error as the very first event fails the attempt), the usage meter (a stream that ended in error) and
 * the translators (the client's own error event), so none of them can see an error the others miss. It is one for
 * every protocol, because compatible services mix them (an Anthropic error type on a chat stream, OpenAI's codes in
 * any envelope): each protocol's error shapes and names are all recognized on every upstream.
 */
import { type ErrorKind, GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";

/** Anthropic error types and OpenAI error codes or types, by the kind they mean (see docs/protocols.md, "Errors"). */
const KIND_BY_NAME: Record<string, ErrorKind> = {
  invalid_request_error: "invalid_request",
  context_length_exceeded: "invalid_request",
  not_found_error: "not_found",
  request_too_large: "request_too_large",
  rate_limit_error: "rate_limit",
  rate_limit_exceeded: "rate_limit",
  insufficient_quota: "rate_limit",
  overloaded_error: "overloaded",
  overloaded: "overloaded",
  timeout_error: "timeout",
  api_error: "upstream",
  // Google's status names (the Gemini API's `error.status`).
  INVALID_ARGUMENT: "invalid_request",
  FAILED_PRECONDITION: "invalid_request",
  OUT_OF_RANGE: "invalid_request",
  NOT_FOUND: "not_found",
  RESOURCE_EXHAUSTED: "rate_limit",
  UNAVAILABLE: "unavailable",
  DEADLINE_EXCEEDED: "timeout",
  INTERNAL: "upstream",
};

/** An `error` member that holds something: an object or a string (`"error": null` is none). */
const ERROR_MEMBER = /"error"\s*:\s*[{"]/;

/**
 * The error an upstream event reports, or undefined when it reports none. An event is an error when it is named
 * `error`, when its payload is `{"type":"error",...}` (Anthropic) or `{"type":"response.failed",...}` (Responses), or
 * when its payload carries an `error` member (chat: alone, or on a chunk). The error's own object is returned (the
 * payload itself when it has no `error` member, `{}` when it cannot be read).
 */
export function upstreamEventError(message: SseMessage): JsonObject | undefined {
  const named = message.event === "error";
  // Most events never mention an error, and a Responses event's `"error": null` is none; only those that might are
  // parsed.
  if (!named && !ERROR_MEMBER.test(message.data) && !message.data.includes('"response.failed"')) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(message.data);
  } catch {
    return named ? {} : undefined;
  }
  if (!isObject(payload)) return named ? {} : undefined;
  const holder = payload.type === "response.failed" && isObject(payload.response) ? payload.response : payload;
  const error = holder.error;
  if (isObject(error)) return error;
  if (typeof error === "string") return { message: error };
  // An error event without an `error` member is the error itself.
  return named || payload.type === "error" || holder !== payload ? holder : undefined;
}

/** The kind an upstream error object means: its code, else its type (or Google's status), by name; else `upstream`. */
function upstreamErrorKind(error: JsonObject): ErrorKind {
  for (const name of [error.code, error.type, error.status]) {
    const kind = typeof name === "string" ? KIND_BY_NAME[name] : undefined;
    if (kind) return kind;
  }
  return "upstream";
}

/** The upstream's in-band error as a GatewayError of its kind, or undefined; `fallback` when it gives no message. */
export function upstreamStreamError(message: SseMessage, fallback: string): GatewayError | undefined {
  const error = upstreamEventError(message);
  if (!error) return undefined;
  const text = typeof error.message === "string" && error.message ? error.message : fallback;
  return new GatewayError(upstreamErrorKind(error), text);
}

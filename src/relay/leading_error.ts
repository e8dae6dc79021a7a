/**
 * @module An upstream stream whose very first event is an error: nothing has reached the client yet, so it is
 * a failed attempt (with an HTTP status the SDKs can retry on, or another upstream), not a 200 with an error inside.
 */
import { type ErrorKind, GatewayError } from "../core/errors.ts";
import { SseParser } from "../core/sse.ts";
import { isObject, type Protocol } from "../core/types.ts";
import { redactSecrets } from "../providers/mod.ts";

/** Anthropic error types and OpenAI error codes or types, by the kind they mean (see docs/protocols.md, "Errors"). */
const KINDS: Record<string, ErrorKind> = {
  overloaded_error: "overloaded",
  overloaded: "overloaded",
  rate_limit_error: "rate_limit",
  rate_limit_exceeded: "rate_limit",
  insufficient_quota: "rate_limit",
  timeout_error: "timeout",
  invalid_request_error: "invalid_request",
  context_length_exceeded: "invalid_request",
  not_found_error: "not_found",
  request_too_large: "request_too_large",
};

const decoder = new TextDecoder();

/** The error the first event of `chunk` reports, or undefined when it is not an error event. */
export function leadingError(
  chunk: Uint8Array,
  protocol: Protocol,
  upstream: string,
  secrets: readonly string[] = [],
): GatewayError | undefined {
  let text = decoder.decode(chunk);
  // Most streams open with message_start or a first chunk; only text that mentions an error is parsed again.
  if (!text.includes("error")) return undefined;
  // The message goes to the client; an upstream that quotes the gateway's credentials must not hand them on.
  text = redactSecrets(text, secrets);
  const [first] = new SseParser().push(text);
  if (!first) return undefined;
  const isError = protocol === "anthropic"
    ? first.event === "error"
    : first.event === "error" || first.event === "response.failed" || first.data.startsWith('{"error"');
  if (!isError) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(first.data);
  } catch {
    body = undefined;
  }
  const holder = isObject(body) && isObject(body.response) ? body.response : body;
  const error = isObject(holder) && isObject(holder.error) ? holder.error : isObject(holder) ? holder : {};
  const names = [error.type, error.code].filter((v): v is string => typeof v === "string");
  const kind = names.map((name) => KINDS[name]).find((k) => k !== undefined) ?? "upstream";
  const message = typeof error.message === "string"
    ? error.message
    : `Upstream "${upstream}" failed its stream at once`;
  // Each kind's own status (529, 429, 504, 400, 404, 413; anything unknown is a 502 "upstream").
  return new GatewayError(kind, message);
}

/**
 * @module An upstream stream whose very first event is an error, or a 2xx JSON answer that is an error envelope:
 * nothing has reached the client yet, so it is a failed attempt (with an HTTP status the SDKs can retry on, or
 * another upstream), not a 200 with an error inside.
 */
import type { GatewayError } from "../core/errors.ts";
import { SseParser } from "../core/sse.ts";
import { upstreamStreamError } from "../protocols/upstream_error.ts";
import { redactText } from "../core/redact.ts";

const decoder = new TextDecoder();

/**
 * The error the first event of `chunk` reports, or undefined when it is not an error event (the decision is the one
 * the meter and the translators make). The error has its kind's own status: 529, 429, 504, 400, 404, 413, else 502.
 */
export function leadingError(
  chunk: Uint8Array,
  upstream: string,
  secrets: readonly string[] = [],
): GatewayError | undefined {
  let text = decoder.decode(chunk);
  // Most streams open with message_start or a first chunk; only text that mentions an error is parsed again.
  if (!text.includes("error") && !text.includes("failed")) return undefined;
  // The message goes to the client; an upstream that quotes the gateway's credentials must not hand them on.
  text = redactText(text, secrets);
  const [first] = new SseParser().push(text);
  return first && upstreamStreamError(first, `Upstream "${upstream}" failed its stream at once`);
}

/**
 * The error a 2xx JSON answer carries instead of a reply (some services and proxies answer errors with 200), read as
 * the same payload in a stream event would be; undefined for any other answer. A client would otherwise get an empty
 * success.
 */
export function errorInAnswer(
  text: string,
  upstream: string,
  secrets: readonly string[] = [],
): GatewayError | undefined {
  const error = upstreamStreamError({ data: text }, `Upstream "${upstream}" answered with an error`);
  // Its message goes to the client, so the gateway's credentials are taken out of it first.
  return error && upstreamStreamError({ data: redactText(text, secrets) }, error.message);
}

/**
 * @module What the gateway reads of an upstream's answer headers: the upstream's own id for the request (logged), and
 * the retry headers of a refusal, read strictly: what the relay waits on, and what the client is handed. A value
 * passes only in its header's own form (`x-should-retry` as `true` or `false`, `retry-after` as seconds or an
 * IMF-fixdate, `retry-after-ms` as a number), so nothing else an upstream writes there, such as the key it was sent,
 * can reach a client; what passes still goes through the redaction bodies go through.
 */
import { saneId } from "../core/http.ts";
import { isObject } from "../core/types.ts";
import { redactText } from "../core/redact.ts";

/** Response headers an upstream sets that clients act on (retry timing), the only ones relayed. */
export const RELAYED_HEADERS = ["retry-after", "retry-after-ms", "x-should-retry"] as const;

/** A number of seconds or milliseconds: digits, with an optional fraction (some services send `0.5`). */
const NUMBER = /^\d{1,15}(?:\.\d{1,9})?$/;
/** An IMF-fixdate, the HTTP date every sender must produce (RFC 9110, 5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = new RegExp(
  "^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) " +
    "\\d{4} \\d{2}:\\d{2}:\\d{2} GMT$",
);

/**
 * One retry header's value as epoch-relative milliseconds: a delay (`delay`), or a moment (`at`, for a date); undefined
 * when the value is missing, blank or not in the header's form. `Date.parse` alone would read far more than a date
 * (`Tue, 01 Jan 2030 00:00:00 GMT (anything)`), and `Number` more than digits (`0x10`, `1e3`, blanks as 0).
 */
function readValue(name: string, value: string | null): { delay: number } | { at: number } | undefined {
  if (value === null) return undefined;
  if (NUMBER.test(value)) return { delay: name === "retry-after-ms" ? Number(value) : Number(value) * 1000 };
  if (name !== "retry-after" || !IMF_FIXDATE.test(value)) return undefined;
  const at = Date.parse(value);
  // A date the calendar has not (31 Feb) reads as another day; only one that reads back the same is taken.
  return Number.isNaN(at) || new Date(at).toUTCString() !== value ? undefined : { at };
}

/** `retry-after-ms`, else `retry-after` in seconds or as an HTTP date, in milliseconds from `now`. */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  for (const name of ["retry-after-ms", "retry-after"]) {
    const read = readValue(name, headers.get(name));
    if (read) return "delay" in read ? read.delay : Math.max(0, read.at - now);
  }
  return undefined;
}

/** The retry headers of an upstream's answer that a client may be given, each in its own form, secrets taken out. */
export function relayedHeaders(upstream: Headers, secrets: readonly string[]): Headers {
  const headers = new Headers();
  for (const name of RELAYED_HEADERS) {
    const value = upstream.get(name);
    if (value === null) continue;
    const valid = name === "x-should-retry"
      ? value === "true" || value === "false"
      : readValue(name, value) !== undefined;
    // A value that names a secret is left out whole: a partly redacted one would not read.
    if (valid && redactText(value, secrets) === value) headers.set(name, value);
  }
  return headers;
}

/** Where upstreams name their own id for a request: Anthropic's, OpenAI's and AWS's response headers. */
const REQUEST_ID_HEADERS = ["request-id", "x-request-id", "x-amzn-requestid"];

/**
 * The upstream's own id for a request, from its answer's headers or an error body's `request_id`, kept only when it
 * looks like an id and holds none of `secrets` (it is logged, traced and kept in the request log: an upstream that
 * echoes its key there, whatever the key's shape, must not have it written down). It stays findable beside the
 * gateway's id, which the client's headers carry.
 */
export function upstreamRequestId(headers: Headers, body: unknown, secrets: readonly string[]): string | undefined {
  const candidates = REQUEST_ID_HEADERS.map((name) => headers.get(name));
  if (isObject(body) && typeof body.request_id === "string") candidates.push(body.request_id);
  for (const candidate of candidates) {
    const id = saneId(candidate);
    if (id && redactText(id, secrets) === id) return id;
  }
  return undefined;
}

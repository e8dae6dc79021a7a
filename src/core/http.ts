/** @module Small HTTP helpers: JSON responses, request ids and client timeouts. */

/** A JSON response with the right content type (without it the SDKs hand back a string). */
export function json(body: unknown, init: ResponseInit = {}): Response {
  const headers = new Headers(init.headers);
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify(body), { ...init, headers });
}

/** Client-sent ids are kept only in this shape, so they are safe in headers, logs, records and upstream calls. */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client-sent id when it is sane; one shaped like a token secret is refused too, since ids are logged. */
export function saneId(value: string | null): string | undefined {
  return value !== null && SANE_ID.test(value) && !value.startsWith("sk-") ? value : undefined;
}

/** The request's id: the client's `x-request-id` when it is sane, else a new one (it is logged and sent upstream). */
export function requestIdFrom(headers: Headers): string {
  return saneId(headers.get("x-request-id")) ?? newRequestId();
}

/** A new request id in the Anthropic style (`req_` + 24 hex characters). */
export function newRequestId(): string {
  // randomUUID is native and cheaper than formatting random bytes in JS on every request.
  return `req_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/**
 * How long the client waits for an answer, when it says so: the official Anthropic and OpenAI SDKs send their timeout
 * in whole seconds as `x-stainless-timeout`. Under a second (sent as 0) or unreadable, nothing is known.
 */
export function clientTimeoutMs(headers: Headers): number | undefined {
  const seconds = Number(headers.get("x-stainless-timeout") ?? NaN);
  return Number.isInteger(seconds) && seconds >= 1 ? seconds * 1000 : undefined;
}

/**
 * @module The one error type the gateway throws on purpose: its kind, status and message. How each protocol's
 * clients are told of it is that protocol's (src/protocols/).
 */

/** What went wrong, independent of the protocol that reports it. */
export type ErrorKind =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "request_too_large"
  | "request_timeout"
  | "rate_limit"
  | "overloaded"
  | "timeout"
  | "upstream"
  | "unavailable"
  | "internal"
  | "client_closed";

/** The status each kind goes out with, and its OpenAI `code` (which a GatewayError carries for every client). */
const KINDS: Record<ErrorKind, { status: number; code: string | null }> = {
  invalid_request: { status: 400, code: null },
  authentication: { status: 401, code: "invalid_api_key" },
  permission: { status: 403, code: null },
  not_found: { status: 404, code: "model_not_found" },
  request_too_large: { status: 413, code: "request_too_large" },
  // The client stopped sending its body: its side timed out, not the upstream's.
  request_timeout: { status: 408, code: "request_timeout" },
  rate_limit: { status: 429, code: "rate_limit_exceeded" },
  overloaded: { status: 529, code: "overloaded" },
  timeout: { status: 504, code: "timeout" },
  upstream: { status: 502, code: "upstream_error" },
  unavailable: { status: 503, code: "service_unavailable" },
  internal: { status: 500, code: null },
  // The client went away first: nothing reaches it, and 499 (as proxies log it) keeps it apart from the 5xx.
  client_closed: { status: 499, code: "client_closed" },
};

/** Options for {@linkcode GatewayError}. */
export interface GatewayErrorOptions extends ErrorOptions {
  /** Overrides the kind's status, e.g. to keep an upstream's 500 or 529. */
  status?: number;
  /** The request field at fault, reported as OpenAI's `param`. */
  param?: string;
  /** Overrides the kind's OpenAI `code`. */
  code?: string;
  /** Headers to send with the error, such as `retry-after`. */
  headers?: HeadersInit;
}

/** An error with a kind, a status and a message that is safe to show the client. */
export class GatewayError extends Error {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly param: string | null;
  readonly code: string | null;
  readonly headers: Headers;

  constructor(
    kind: ErrorKind,
    message: string,
    options: GatewayErrorOptions = {},
  ) {
    super(message, options);
    this.name = "GatewayError";
    this.kind = kind;
    this.status = options.status ?? KINDS[kind].status;
    this.param = options.param ?? null;
    this.code = options.code ?? KINDS[kind].code;
    this.headers = new Headers(options.headers);
  }
}

/**
 * The client's own cancellation: it left before its answer (while its body was still arriving, or while the gateway
 * waited on an upstream). Not a failure of the gateway or the upstream: logged at info as 499, never a 5xx.
 */
export function clientClosed(cause?: unknown): GatewayError {
  return new GatewayError("client_closed", "The client closed the request before its answer", { cause });
}

/** Turns anything thrown into a GatewayError; unknown errors become `internal`. */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError("internal", "Internal error", { cause: err });
}

/** The kind that an HTTP status means, for errors that only have a status. */
export function kindForStatus(status: number): ErrorKind {
  if (status === 400 || status === 422) return "invalid_request";
  if (status === 401 || status === 403) return "upstream";
  if (status === 404) return "not_found";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit";
  if (status === 529) return "overloaded";
  if (status === 504 || status === 408) return "timeout";
  if (status === 503) return "unavailable";
  if (status >= 500) return "upstream";
  return "invalid_request";
}

/** What a client is shown of an error: internal details stay in the log, and the client sees a generic message. */
export function clientMessage(err: GatewayError): string {
  return err.kind === "internal" ? "Internal error" : err.message;
}

/**
 * @module The one error type the gateway throws on purpose, and its rendering per client protocol:
 * a JSON response before the first byte, an in-band SSE event after it.
 */
import type { ServedProtocol } from "./types.ts";

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

interface KindInfo {
  status: number;
  anthropic: string;
  openai: string;
  code: string | null;
}

/** Status and each protocol's error type per kind (see docs/protocols.md, "Errors"). */
const KINDS: Record<ErrorKind, KindInfo> = {
  invalid_request: { status: 400, anthropic: "invalid_request_error", openai: "invalid_request_error", code: null },
  authentication: {
    status: 401,
    anthropic: "authentication_error",
    openai: "invalid_request_error",
    code: "invalid_api_key",
  },
  permission: { status: 403, anthropic: "permission_error", openai: "permission_error", code: null },
  not_found: { status: 404, anthropic: "not_found_error", openai: "invalid_request_error", code: "model_not_found" },
  request_too_large: {
    status: 413,
    anthropic: "request_too_large",
    openai: "invalid_request_error",
    code: "request_too_large",
  },
  // The client stopped sending its body: its side timed out, not the upstream's.
  request_timeout: {
    status: 408,
    anthropic: "timeout_error",
    openai: "invalid_request_error",
    code: "request_timeout",
  },
  rate_limit: { status: 429, anthropic: "rate_limit_error", openai: "rate_limit_error", code: "rate_limit_exceeded" },
  overloaded: { status: 529, anthropic: "overloaded_error", openai: "server_error", code: "overloaded" },
  timeout: { status: 504, anthropic: "timeout_error", openai: "server_error", code: "timeout" },
  upstream: { status: 502, anthropic: "api_error", openai: "server_error", code: "upstream_error" },
  unavailable: { status: 503, anthropic: "api_error", openai: "server_error", code: "service_unavailable" },
  // Internal details stay in the log; the client sees a generic message.
  internal: { status: 500, anthropic: "api_error", openai: "server_error", code: null },
  // The client went away first: nothing reaches it, and 499 (as proxies log it) keeps it apart from the 5xx.
  client_closed: { status: 499, anthropic: "api_error", openai: "invalid_request_error", code: "client_closed" },
};

/** Google's `error.status` per kind, for Gemini clients (see docs/protocols.md, "Errors"). */
const GOOGLE_STATUS: Record<ErrorKind, string> = {
  invalid_request: "INVALID_ARGUMENT",
  authentication: "UNAUTHENTICATED",
  permission: "PERMISSION_DENIED",
  not_found: "NOT_FOUND",
  request_too_large: "INVALID_ARGUMENT",
  request_timeout: "DEADLINE_EXCEEDED",
  rate_limit: "RESOURCE_EXHAUSTED",
  overloaded: "UNAVAILABLE",
  timeout: "DEADLINE_EXCEEDED",
  upstream: "INTERNAL",
  unavailable: "UNAVAILABLE",
  internal: "INTERNAL",
  client_closed: "CANCELLED",
};

/** Google's error body: the status it is sent with, the status name, and how long to wait as a RetryInfo. */
function googleErrorBody(err: GatewayError, message: string): Record<string, unknown> {
  const error: Record<string, unknown> = {
    code: statusForClient(err.status, "gemini", new Headers()),
    message,
    status: GOOGLE_STATUS[err.kind],
  };
  const retry = Number(err.headers.get("retry-after"));
  if (retry > 0) error.details = [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${retry}s` }];
  return { error };
}

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

/**
 * A JSON-RPC error answering request `id` (null when it is not known) on the MCP endpoint: "Invalid Request" for the
 * client's mistakes, the implementation-defined server error otherwise, and how long to wait in `data` when the error
 * says so (see docs/mcp.md, "Errors").
 */
export function jsonRpcErrorBody(err: GatewayError, id: string | number | null): Record<string, unknown> {
  const message = err.kind === "internal" ? "Internal error" : err.message;
  const error: Record<string, unknown> = { code: err.kind === "invalid_request" ? -32600 : -32000, message };
  const retry = Number(err.headers.get("retry-after"));
  if (retry > 0) error.data = { retry_after_seconds: retry };
  return { jsonrpc: "2.0", id, error };
}

/** The error body in a protocol's shape. */
export function errorBody(
  err: GatewayError,
  protocol: ServedProtocol,
  requestId?: string,
): Record<string, unknown> {
  if (protocol === "mcp") return jsonRpcErrorBody(err, null);
  const info = KINDS[err.kind];
  const message = err.kind === "internal" ? "Internal error" : err.message;
  if (protocol === "anthropic") {
    const body: Record<string, unknown> = {
      type: "error",
      error: { type: info.anthropic, message },
    };
    if (requestId) body.request_id = requestId;
    return body;
  }
  if (protocol === "gemini") return googleErrorBody(err, message);
  return {
    error: { message, type: info.openai, param: err.param, code: err.code },
  };
}

/**
 * The status an error has for a client of `protocol`, adding to `headers` what it needs: 529 (overloaded) is
 * Anthropic's own status, so OpenAI clients get 503, with `x-should-retry` when the upstream named no retry-after.
 */
export function statusForClient(status: number, protocol: ServedProtocol, headers: Headers): number {
  if (status !== 529 || protocol === "anthropic") return status;
  if (!headers.has("retry-after") && !headers.has("retry-after-ms")) headers.set("x-should-retry", "true");
  return 503;
}

/** A JSON error response in the protocol's shape, with the error's status and headers. */
export function errorResponse(
  err: GatewayError,
  protocol: ServedProtocol,
  requestId?: string,
): Response {
  const headers = new Headers(err.headers);
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify(errorBody(err, protocol, requestId)), {
    status: statusForClient(err.status, protocol, headers),
    headers,
  });
}

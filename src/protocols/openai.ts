/**
 * @module What OpenAI's APIs share on the wire, whichever endpoint: the error body its SDKs read (see
 * docs/protocols.md, "Errors"). Chat Completions and Responses use it, as every other OpenAI endpoint would.
 */
import type { ErrorKind } from "../core/errors.ts";
import { type ErrorShape, hasTypedError, without529 } from "./wire.ts";

/** OpenAI's error `type` per kind; the `code` is the error's own. */
const ERROR_TYPE: Record<ErrorKind, string> = {
  invalid_request: "invalid_request_error",
  authentication: "invalid_request_error",
  permission: "permission_error",
  not_found: "invalid_request_error",
  request_too_large: "invalid_request_error",
  request_timeout: "invalid_request_error",
  rate_limit: "rate_limit_error",
  overloaded: "server_error",
  timeout: "server_error",
  upstream: "server_error",
  unavailable: "server_error",
  internal: "server_error",
  client_closed: "invalid_request_error",
};

/** OpenAI's `{error: {message, type, param, code}}`; 529 goes out as 503, which the SDKs retry. */
export const openaiErrors: ErrorShape = {
  body: (err, message) => ({ error: { message, type: ERROR_TYPE[err.kind], param: err.param, code: err.code } }),
  status: without529,
  keeps: hasTypedError,
};

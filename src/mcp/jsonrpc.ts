/**
 * @module JSON-RPC 2.0 as MCP uses it: the three kinds of message, telling them apart (and naming what is wrong with a
 * message that is none of them), the error codes, and the error the gateway answers a request with.
 */
import { isObject, type JsonObject } from "../core/types.ts";

/** A request's id; MCP never uses null. */
export type RpcId = string | number;

/** A request: it gets exactly one response with its id. */
export interface RpcRequest {
  jsonrpc: "2.0";
  id: RpcId;
  method: string;
  params?: JsonObject;
}

/** A notification: no id, no response. */
export interface RpcNotification {
  jsonrpc: "2.0";
  method: string;
  params?: JsonObject;
}

/** A response: a result, or an error. */
export interface RpcResponse {
  jsonrpc: "2.0";
  id: RpcId | null;
  result?: JsonObject;
  error?: { code: number; message: string; data?: unknown };
}

/** Any of the three. */
export type RpcMessage = RpcRequest | RpcNotification | RpcResponse;

/** The codes of JSON-RPC 2.0, and the ones MCP adds (see docs/mcp.md, "Errors"). */
export const CODES = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** The implementation-defined server error: a server unavailable, an answer too large, a limit. */
  server: -32000,
  /** A call that got no answer within its time limit (the official SDKs' RequestTimeout). */
  timeout: -32001,
  /** A session the server does not know (on the transport's 404), as the official SDKs say it. */
  sessionNotFound: -32001,
  /** MCP's "resource not found". */
  resourceNotFound: -32002,
} as const;

/** How a call to a server ended, as the request log, usage and metrics count it (a fixed set: bounded labels). */
export type Outcome =
  | "ok"
  | "tool_error"
  | "refused"
  | "rate_limited"
  | "invalid"
  | "timeout"
  | "unavailable"
  | "too_large"
  | "upstream_error"
  | "client_closed";

/** An error the gateway answers one request with, as JSON-RPC defines it, and the outcome it stands for. */
export class RpcError extends Error {
  readonly code: number;
  readonly data?: unknown;
  readonly outcome: Outcome;
  constructor(code: number, message: string, options: { data?: unknown; outcome?: Outcome } = {}) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = options.data;
    this.outcome = options.outcome ??
      (code === CODES.timeout ? "timeout" : code === CODES.server ? "unavailable" : "invalid");
  }
}

/** True for a request (it has an id and a method). */
export function isRequest(message: RpcMessage): message is RpcRequest {
  return "method" in message && "id" in message;
}

/** True for a notification (a method and no id). */
export function isNotification(message: RpcMessage): message is RpcNotification {
  return "method" in message && !("id" in message);
}

/** The response carrying `result` for request `id`. */
export function resultOf(id: RpcId | null, result: JsonObject): RpcResponse {
  return { jsonrpc: "2.0", id, result };
}

/** The response carrying `err` for request `id`. */
export function errorOf(id: RpcId | null, err: RpcError): RpcResponse {
  const error: RpcResponse["error"] = { code: err.code, message: err.message };
  if (err.data !== undefined) error!.data = err.data;
  return { jsonrpc: "2.0", id, error };
}

function validId(id: unknown): id is RpcId {
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id));
}

/**
 * The message `value` is, or an {@linkcode RpcError} (Invalid Request) saying why it is none. A batch (an array) is
 * refused: MCP has sent one message per POST since 2025-06-18.
 */
export function toMessage(value: unknown): RpcMessage | RpcError {
  if (Array.isArray(value)) {
    return new RpcError(CODES.invalidRequest, "Invalid Request: batches are not supported; send one message per POST");
  }
  if (!isObject(value)) return new RpcError(CODES.invalidRequest, "Invalid Request: a message must be a JSON object");
  if (value.jsonrpc !== "2.0") return new RpcError(CODES.invalidRequest, 'Invalid Request: jsonrpc must be "2.0"');
  if (value.params !== undefined && !isObject(value.params)) {
    return new RpcError(CODES.invalidRequest, "Invalid Request: params must be an object");
  }
  if ("method" in value) {
    if (typeof value.method !== "string" || value.method === "") {
      return new RpcError(CODES.invalidRequest, "Invalid Request: method must be a non-empty string");
    }
    if ("id" in value && !validId(value.id)) {
      return new RpcError(CODES.invalidRequest, "Invalid Request: id must be a string or a number");
    }
    return value as unknown as RpcMessage;
  }
  if (!("id" in value) || (value.id !== null && !validId(value.id))) {
    return new RpcError(CODES.invalidRequest, "Invalid Request: a message needs a method, or an id with a result");
  }
  if (("result" in value) === ("error" in value)) {
    return new RpcError(CODES.invalidRequest, "Invalid Request: a response has exactly one of result or error");
  }
  return value as unknown as RpcResponse;
}

/** The params of a request, or an empty object. */
export function paramsOf(message: RpcRequest | RpcNotification): JsonObject {
  return message.params ?? {};
}

/** A string param, or an Invalid params error naming it. */
export function stringParam(params: JsonObject, name: string): string {
  const value = params[name];
  if (typeof value !== "string" || value === "") {
    throw new RpcError(CODES.invalidParams, `Invalid params: ${name} must be a non-empty string`);
  }
  return value;
}

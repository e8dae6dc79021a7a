/**
 * @module MCP's JSON-RPC on the wire, as far as the gateway's errors go: the error a client of /mcp reads (see
 * docs/mcp.md, "Errors").
 */
import { clientMessage, type GatewayError } from "../core/errors.ts";
import type { JsonObject } from "../core/types.ts";
import { type ErrorShape, without529 } from "./wire.ts";

/**
 * A JSON-RPC error answering request `id` (null when it is not known) on the MCP endpoint: "Invalid Request" for the
 * client's mistakes, the implementation-defined server error otherwise, and how long to wait in `data` when the error
 * says so.
 */
export function jsonRpcErrorBody(err: GatewayError, id: string | number | null): JsonObject {
  const error: JsonObject = { code: err.kind === "invalid_request" ? -32600 : -32000, message: clientMessage(err) };
  const retry = Number(err.headers.get("retry-after"));
  if (retry > 0) error.data = { retry_after_seconds: retry };
  return { jsonrpc: "2.0", id, error };
}

/** The errors of /mcp: a JSON-RPC error whose request is not known. */
export const mcpErrors: ErrorShape = {
  body: (err) => jsonRpcErrorBody(err, null),
  status: without529,
  // No upstream answers in JSON-RPC through the relay.
  keeps: () => false,
};

/**
 * @module How an error reaches a client, in its protocol's shape as the registry states it: a JSON response before
 * the first byte, in-band events after it.
 */
import { clientMessage, type GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import type { JsonObject, Protocol, ServedProtocol } from "../core/types.ts";
import { errorShape, PROTOCOLS } from "./registry.ts";

/** The error body in a protocol's shape; those that carry the request's id (Anthropic's) get `requestId`. */
export function errorBody(err: GatewayError, protocol: ServedProtocol, requestId?: string): JsonObject {
  return errorShape(protocol).body(err, clientMessage(err), requestId);
}

/** The status an error has for a client of `protocol`, adding to `headers` what it needs (see wire.ts, without529). */
export function statusForClient(status: number, protocol: ServedProtocol, headers: Headers): number {
  return errorShape(protocol).status(status, headers);
}

/** A JSON error response in the protocol's shape, with the error's status and headers. */
export function errorResponse(err: GatewayError, protocol: ServedProtocol, requestId?: string): Response {
  const headers = new Headers(err.headers);
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify(errorBody(err, protocol, requestId)), {
    status: statusForClient(err.status, protocol, headers),
    headers,
  });
}

/** A protocol's in-band error events: never followed by a normal ending (docs/protocols.md, "Server-sent events"). */
export function errorEvents(err: GatewayError, protocol: Protocol): SseMessage[] {
  return PROTOCOLS[protocol].stream.errorEvents(err);
}

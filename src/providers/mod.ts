/**
 * @module Transport per upstream protocol: the URL, the upstream's own credentials and the client headers
 * that may cross. The client's token never does.
 */
import type { Operation } from "../core/protocols.ts";
import type { JsonObject, UpstreamProtocol } from "../core/types.ts";
import type { Route } from "../relay/routing.ts";

/** The version the seed names for requests that carry none. */
export const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";

const PATHS: Record<UpstreamProtocol, Partial<Record<Operation, string>>> = {
  anthropic: { generate: "/messages", count_tokens: "/messages/count_tokens" },
  "openai-chat": { generate: "/chat/completions" },
};

/** Everything needed to build one upstream request. */
export interface UpstreamCall {
  route: Route;
  operation: Operation;
  /** The JSON body, or bytes already serialized (a passthrough body that needs no change). */
  body: JsonObject | Uint8Array<ArrayBuffer>;
  /** The client's headers; only protocol headers are copied from them. */
  clientHeaders: Headers;
  /** The client's query string, forwarded only when the upstream speaks the client's protocol. */
  search: string;
  requestId: string;
}

/** Builds the upstream URL and headers; pure apart from serializing the body. */
export function buildUpstreamRequest(call: UpstreamCall): { url: string; init: RequestInit } {
  const { route, clientHeaders } = call;
  const headers = new Headers({ "content-type": "application/json", "x-request-id": call.requestId });
  if (route.protocol === "anthropic") {
    headers.set("x-api-key", route.apiKey ?? "");
    // vendorx-* is the seed's spelling of the same headers: forward it as sent and let it stand in for the real one.
    const version = clientHeaders.get("anthropic-version") ?? clientHeaders.get("vendorx-version");
    headers.set("anthropic-version", version ?? DEFAULT_ANTHROPIC_VERSION);
    const beta = clientHeaders.get("anthropic-beta") ?? clientHeaders.get("vendorx-beta");
    if (beta !== null) headers.set("anthropic-beta", beta);
    for (const name of ["vendorx-version", "vendorx-beta"]) {
      const value = clientHeaders.get(name);
      if (value !== null) headers.set(name, value);
    }
  } else {
    headers.set("authorization", `Bearer ${route.apiKey ?? ""}`);
  }
  const path = PATHS[route.protocol][call.operation];
  if (!path) throw new RangeError(`Cannot build upstream request: ${route.protocol} has no ${call.operation}`);
  return {
    url: `${route.upstream.base_url}${path}${call.search}`,
    init: { method: "POST", headers, body: call.body instanceof Uint8Array ? call.body : JSON.stringify(call.body) },
  };
}

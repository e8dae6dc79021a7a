/**
 * @module Transport per upstream protocol: the URL, the upstream's own credentials and the client headers
 * that may cross. The client's token never does. Each protocol's transport lives in its own file.
 */
import type { UpstreamConfig } from "../core/config.ts";
import type { Operation } from "../core/protocols.ts";
import type { JsonObject, UpstreamProtocol } from "../core/types.ts";
import { anthropic } from "./anthropic.ts";
import { openai } from "./openai.ts";

/** What one upstream protocol adds to a request: the paths it serves and its headers. */
interface Transport {
  paths: Partial<Record<Operation, string>>;
  /** Sets the upstream's own credentials and the protocol headers that may cross from the client's headers. */
  headers(headers: Headers, apiKey: string, client: Headers): void;
}

const TRANSPORTS: Record<UpstreamProtocol, Transport> = { anthropic, "openai-chat": openai };

/** The upstream a call goes to; a route of the route table is one. */
export interface Target {
  upstream: Pick<UpstreamConfig, "base_url">;
  protocol: UpstreamProtocol;
  /** The upstream's key; undefined when its environment variable is unset. */
  apiKey: string | undefined;
}

/** Everything needed to build one upstream request. */
export interface UpstreamCall {
  route: Target;
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
  const { route } = call;
  const transport = TRANSPORTS[route.protocol];
  const headers = new Headers({ "content-type": "application/json", "x-request-id": call.requestId });
  transport.headers(headers, route.apiKey ?? "", call.clientHeaders);
  const path = transport.paths[call.operation];
  if (!path) throw new RangeError(`Cannot build upstream request: ${route.protocol} has no ${call.operation}`);
  return {
    url: `${route.upstream.base_url}${path}${call.search}`,
    init: { method: "POST", headers, body: call.body instanceof Uint8Array ? call.body : JSON.stringify(call.body) },
  };
}

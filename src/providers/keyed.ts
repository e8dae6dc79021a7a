/**
 * @module The transport of an upstream reached with an API key (Anthropic, OpenAI's two APIs and compatible services): the URL,
 * the key and the client headers that may cross. The client's token never does. Each protocol's paths and headers
 * live in its own file.
 */
import type { UpstreamConfig } from "../core/config.ts";
import type { JsonObject, Operation, UpstreamProtocol } from "../core/types.ts";
import { anthropic } from "./anthropic.ts";
import { openai } from "./openai.ts";
import { openaiResponses } from "./openai_responses.ts";
import { forwardBody, type Transport } from "./transport.ts";
import { uploadBody } from "./upload.ts";

/** What one upstream protocol adds to a request: the paths it serves and its headers. */
interface KeyedApi {
  paths: Partial<Record<Operation, string>>;
  /** Adds the upstream's own credentials and the protocol headers that may cross from the client's headers. */
  headers(headers: [string, string][], apiKey: string, client: Headers): void;
}

/** The protocols whose paths do not depend on the model (Gemini's do: see gemini.ts). */
type KeyedProtocol = Exclude<UpstreamProtocol, "gemini">;

const APIS: Record<KeyedProtocol, KeyedApi> = {
  anthropic,
  "openai-chat": openai,
  "openai-responses": openaiResponses,
};

/** The upstream a call goes to. */
export interface Target {
  upstream: Pick<UpstreamConfig, "base_url">;
  protocol: KeyedProtocol;
  /** The upstream's key; undefined when its environment variable is unset. */
  apiKey: string | undefined;
}

/** Everything needed to build one upstream request. */
export interface UpstreamCall {
  route: Target;
  operation: Operation;
  /** The JSON body, or bytes already serialized (a passthrough body that needs no change). */
  body: JsonObject | Uint8Array<ArrayBuffer>;
  /** The client's body size in bytes; a large body goes as a stream of slices. */
  size?: number;
  /** The client's headers; only protocol headers are copied from them. */
  clientHeaders: Headers;
  /** The client's query string, forwarded only when the upstream speaks the client's protocol. */
  search: string;
  requestId: string;
}

/** Builds the upstream URL and headers; pure apart from serializing the body (or preparing its stream). */
export function buildUpstreamRequest(call: UpstreamCall): { url: string; init: RequestInit } {
  const { route } = call;
  const api = APIS[route.protocol];
  // A list, not a Headers object: fetch checks and copies the headers it is given anyway, so building a Headers here
  // did that work twice on every request.
  const headers: [string, string][] = [["content-type", "application/json"], ["x-request-id", call.requestId]];
  api.headers(headers, route.apiKey ?? "", call.clientHeaders);
  const path = api.paths[call.operation];
  if (!path) throw new RangeError(`Cannot build upstream request: ${route.protocol} has no ${call.operation}`);
  return {
    url: `${route.upstream.base_url}${path}${call.search}`,
    init: {
      method: "POST",
      headers,
      body: uploadBody(call.body, call.size ?? 0),
    },
  };
}

/** The transport of a keyed upstream: the request as built above, sent with the runtime's fetch. */
export function keyedTransport(target: Target, fetch: typeof globalThis.fetch): Transport {
  return {
    async send(call) {
      const { url, init } = buildUpstreamRequest({
        route: target,
        operation: call.operation,
        body: call.bytes ?? call.body,
        size: call.size,
        clientHeaders: call.clientHeaders,
        search: call.search,
        requestId: call.requestId,
      });
      return await fetch(url, { ...init, signal: call.signal });
    },
    async forward(call) {
      const { headers, body } = forwardBody(call);
      APIS[target.protocol].headers(headers, target.apiKey ?? "", call.clientHeaders);
      const url = `${target.upstream.base_url}${call.path}`;
      return await fetch(url, { method: call.method, headers, body, signal: call.signal });
    },
    secrets: () => target.apiKey ? [target.apiKey] : [],
  };
}

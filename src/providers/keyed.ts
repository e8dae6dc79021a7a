/**
 * @module The transport of an upstream reached with one credential header on every request (Anthropic, OpenAI's two
 * APIs and compatible services, Azure OpenAI): the URL, the credential and the client headers that may cross. The
 * client's token never does. Each API's paths and headers live in its own file; a credential whose tokens expire
 * (Azure's Entra ID) brings its own way of sending (token_send.ts).
 */
import type { Operation } from "../core/types.ts";
import { forwardBody, type Transport, type TransportCall } from "./transport.ts";
import { uploadBody } from "./upload.ts";

/** What one upstream API adds to a request: the paths it serves and the protocol headers that may cross. */
export interface KeyedApi {
  /** The API as an error for an operation it lacks names it. */
  name: string;
  paths: Partial<Record<Operation, string>>;
  /** Copies the protocol headers that may cross from the client's headers; an API without it takes none. */
  clientHeaders?(headers: [string, string][], client: Headers): void;
}

/** How an upstream proves itself: the header each request carries, and the values that must never leak. */
export interface Credential {
  /** Sends the request with the credential's header; a credential whose tokens expire may send it once more. */
  send(
    call: Pick<TransportCall, "signal" | "requestId">,
    post: (header: [string, string]) => Promise<Response>,
    /** True when the body can be sent only once: no second try. */
    once?: boolean,
  ): Promise<Response>;
  secrets(): string[];
}

/** A key sent as it is in `header`, or as a bearer token in `authorization`. */
export function apiKey(header: "x-api-key" | "api-key" | "authorization", key: string): Credential {
  const sent: [string, string] = [header, header === "authorization" ? `Bearer ${key}` : key];
  return { send: (_call, post) => post(sent), secrets: () => [key] };
}

/** The upstream a keyed transport sends to. */
export interface KeyedTarget {
  /** e.g. https://api.anthropic.com/v1 (no trailing slash, no query). */
  baseUrl: string;
  api: KeyedApi;
  credential: Credential;
}

/** The transport of a keyed upstream: the API's path under the base URL, sent with the runtime's fetch. */
export function keyedTransport(target: KeyedTarget, fetch: typeof globalThis.fetch): Transport {
  const { api, credential } = target;
  return {
    async send(call) {
      const path = api.paths[call.operation];
      if (!path) throw new RangeError(`Cannot build upstream request: ${api.name} has no ${call.operation}`);
      const url = `${target.baseUrl}${path}${call.search}`;
      return await credential.send(call, (header) => {
        // A list, not a Headers object: fetch checks and copies the headers it is given anyway, so building a
        // Headers here did that work twice on every request.
        const headers: [string, string][] = [["content-type", "application/json"], ["x-request-id", call.requestId]];
        headers.push(header);
        api.clientHeaders?.(headers, call.clientHeaders);
        // Built on every try: a large body goes as a stream of slices, which one try uses up.
        const body = uploadBody(call.bytes ?? call.body, call.size ?? 0);
        return fetch(url, { method: "POST", headers, body, signal: call.signal });
      });
    },
    async forward(call) {
      const { headers, body } = forwardBody(call);
      api.clientHeaders?.(headers, call.clientHeaders);
      const url = `${target.baseUrl}${call.path}`;
      // A streamed upload can be sent only once, so a credential whose tokens expire gets no second try after a 401.
      const once = body instanceof ReadableStream;
      return await credential.send(
        call,
        (header) => fetch(url, { method: call.method, headers: [...headers, header], body, signal: call.signal }),
        once,
      );
    },
    secrets: () => credential.secrets(),
  };
}

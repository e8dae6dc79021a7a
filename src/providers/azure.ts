/**
 * @module Azure OpenAI's v1 API as an upstream: OpenAI's paths under the resource's `/openai/v1` (Responses create and
 * compact, or Chat Completions, as the config's `api` says, and embeddings on either), the deployment name as the body's model, and the
 * resource's key as `api-key` (never as a bearer) or a Microsoft Entra ID token as a bearer, fetched anew and the
 * request sent once more after a 401. No client header crosses; the answers are OpenAI's shapes and pass as they come.
 */
import type { Operation } from "../core/types.ts";
import type { TokenSource } from "./token_cache.ts";
import { sendWithToken } from "./token_send.ts";
import type { Transport } from "./transport.ts";
import { uploadBody } from "./upload.ts";

/** The paths of each API an Azure upstream may be reached through; the v1 API has no token counting. */
const PATHS: Record<AzureSettings["api"], Partial<Record<Operation, string>>> = {
  responses: { generate: "/responses", compact: "/responses/compact", embed: "/embeddings" },
  chat: { generate: "/chat/completions", embed: "/embeddings" },
};

/** How the gateway proves itself to the resource. */
export type AzureAuth =
  | { kind: "api_key"; apiKey: string }
  | { kind: "entra"; tokens: TokenSource; clientSecret: string };

/** One Azure upstream as configured. */
export interface AzureSettings {
  name: string;
  /** e.g. https://my-resource.openai.azure.com/openai/v1 (no trailing slash, no query). */
  baseUrl: string;
  api: "responses" | "chat";
  auth: AzureAuth;
}

/** What the transport needs from outside. */
export interface AzureDeps {
  fetch: typeof fetch;
  log(line: Record<string, unknown>): void;
}

/** An Azure OpenAI transport. */
export function azureTransport(settings: AzureSettings, deps: AzureDeps): Transport {
  const { auth } = settings;
  return {
    async send(call) {
      const path = PATHS[settings.api][call.operation];
      if (!path) {
        throw new RangeError(`Cannot build upstream request: Azure's ${settings.api} API has no ${call.operation}`);
      }
      const url = `${settings.baseUrl}${path}${call.search}`;
      const post = (credential: [string, string]) =>
        deps.fetch(url, {
          method: "POST",
          headers: [["content-type", "application/json"], ["x-request-id", call.requestId], credential],
          body: uploadBody(call.bytes ?? call.body, call.size ?? 0),
          signal: call.signal,
        });
      if (auth.kind === "api_key") return await post(["api-key", auth.apiKey]);
      // An Entra token refused before its time (revoked, or a clock that drifted): one fresh token, one more try.
      const upstream = { name: settings.name, tokens: auth.tokens, log: deps.log };
      return await sendWithToken(upstream, call, (token) => post(["authorization", `Bearer ${token}`]));
    },
    secrets: () => auth.kind === "api_key" ? [auth.apiKey] : [auth.clientSecret, ...auth.tokens.current()],
  };
}

/**
 * @module Azure OpenAI's v1 API as a keyed upstream: OpenAI's paths under the resource's `/openai/v1` (Responses create
 * and compact, or Chat Completions, as the config's `api` says, and embeddings on either), the deployment name as the body's model, and its own
 * credential: the resource's key as `api-key` (never as a bearer), or a Microsoft Entra ID token as a bearer, fetched
 * anew and the request sent once more after a 401. No client header crosses; the answers are OpenAI's shapes and pass
 * as they come.
 */
import { apiKey, type Credential, type KeyedApi, keyedTransport } from "./keyed.ts";
import { openaiChat, openaiResponses } from "./openai.ts";
import type { TokenSource } from "./token_cache.ts";
import { bearerTokens } from "./token_send.ts";
import type { Transport } from "./transport.ts";

/** The API each `api` setting reaches; the v1 API has no token counting. */
const APIS: Record<AzureSettings["api"], KeyedApi> = {
  responses: { ...openaiResponses, name: "Azure's responses API" },
  chat: { ...openaiChat, name: "Azure's chat API" },
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

/** An Azure OpenAI transport: a keyed one with Azure's credential. */
export function azureTransport(settings: AzureSettings, deps: AzureDeps): Transport {
  return keyedTransport(
    { baseUrl: settings.baseUrl, api: APIS[settings.api], credential: azureCredential(settings, deps.log) },
    deps.fetch,
  );
}

function azureCredential({ name, auth }: AzureSettings, log: AzureDeps["log"]): Credential {
  if (auth.kind === "api_key") return apiKey("api-key", auth.apiKey);
  // An Entra token refused before its time (revoked, or a clock that drifted): one fresh token, one more try.
  return bearerTokens({ name, tokens: auth.tokens, log }, [auth.clientSecret]);
}

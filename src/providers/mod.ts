/**
 * @module The registry of transports by upstream kind, built once per upstream from its config and the credentials
 * its environment variables name: an API key (Anthropic, OpenAI, Gemini, Azure OpenAI), an Entra ID client secret
 * (Azure OpenAI), AWS credentials or a Bedrock API key, or a Google service-account key file (the demo upstream
 * needs none). An upstream whose credentials are missing or unusable gets no transport, and a reason that names only
 * the variables and files (never a value).
 */
import type { UpstreamConfig } from "../core/config.ts";
import { azureTransport } from "./azure.ts";
import { demoTransport } from "./demo.ts";
import { BEDROCK_BETAS, bedrockTransport } from "./bedrock.ts";
import { entraTokens } from "./entra_token.ts";
import { parseServiceAccount, serviceAccountTokens } from "./google_token.ts";
import { geminiTransport } from "./gemini.ts";
import { geminiVertexTransport } from "./gemini_vertex.ts";
import { anthropic } from "./anthropic.ts";
import { apiKey, type Credential, type KeyedApi, keyedTransport } from "./keyed.ts";
import { openaiChat, openaiResponses } from "./openai.ts";
import type { Transport } from "./transport.ts";
import { VERTEX_BETAS, vertexTransport } from "./vertex.ts";

export { estimatedCount, type Transport, type TransportCall } from "./transport.ts";

/** What building transports needs from the process. */
export interface TransportIo {
  env(name: string): string | undefined;
  fetch: typeof fetch;
  now(): Date;
  log(line: Record<string, unknown>): void;
  /** Reads a credentials file that an environment variable names. */
  readTextFile(path: string): string;
}

/** One upstream's transport, or why it has none. */
export type Credentialed = { transport: Transport; problem?: undefined } | { transport?: undefined; problem: string };

/** The transport for each upstream, or the reason it has none, by upstream name. */
export function createTransports(upstreams: readonly UpstreamConfig[], io: TransportIo): Map<string, Credentialed> {
  return new Map(upstreams.map((upstream) => [upstream.name, createTransport(upstream, io)]));
}

/** The API each keyed kind speaks and how its key goes: `openai` is Chat Completions (every compatible service). */
const KEYED: Record<"anthropic" | "openai" | "openai-responses", { api: KeyedApi; key(key: string): Credential }> = {
  anthropic: { api: anthropic, key: (key) => apiKey("x-api-key", key) },
  openai: { api: openaiChat, key: (key) => apiKey("authorization", key) },
  "openai-responses": { api: openaiResponses, key: (key) => apiKey("authorization", key) },
};

/** Every secret of every upstream that has a transport (keys, a cloud's current access token), for redaction. */
export function upstreamSecrets(transports: ReadonlyMap<string, Credentialed>): string[] {
  const secrets: string[] = [];
  for (const { transport } of transports.values()) if (transport) secrets.push(...transport.secrets());
  return secrets;
}

function unset(...names: string[]): { problem: string } {
  return { problem: `${names.join(" and ")} ${names.length > 1 ? "are" : "is"} not set` };
}

function createTransport(upstream: UpstreamConfig, io: TransportIo): Credentialed {
  switch (upstream.protocol) {
    case "anthropic":
    case "openai":
    case "openai-responses": {
      const key = io.env(upstream.api_key_env) || undefined;
      if (!key) return unset(upstream.api_key_env);
      const { api, key: credential } = KEYED[upstream.protocol];
      return { transport: keyedTransport({ baseUrl: upstream.base_url, api, credential: credential(key) }, io.fetch) };
    }
    case "gemini": {
      const apiKey = io.env(upstream.api_key_env) || undefined;
      if (!apiKey) return unset(upstream.api_key_env);
      return { transport: geminiTransport({ baseUrl: upstream.base_url, apiKey }, io.fetch) };
    }
    case "azure-openai":
      return azureFrom(upstream, io);
    case "anthropic-bedrock":
      return bedrockFrom(upstream, io);
    case "anthropic-vertex":
    case "gemini-vertex":
      return vertexFrom(upstream, io);
    case "demo":
      return { transport: demoTransport() };
  }
}

/** Azure OpenAI with its resource key, or with an Entra ID token for the app registration the config names. */
function azureFrom(upstream: Extract<UpstreamConfig, { protocol: "azure-openai" }>, io: TransportIo): Credentialed {
  const settings = { name: upstream.name, baseUrl: upstream.base_url, api: upstream.api };
  const { entra } = upstream;
  if (entra) {
    const clientSecret = io.env(entra.client_secret_env) || undefined;
    if (!clientSecret) return unset(entra.client_secret_env);
    const credentials = {
      authority: entra.authority,
      tenantId: entra.tenant_id,
      clientId: entra.client_id,
      clientSecret,
      scope: entra.scope,
    };
    const tokens = entraTokens(credentials, { fetch: io.fetch, now: () => io.now().getTime() });
    return { transport: azureTransport({ ...settings, auth: { kind: "entra", tokens, clientSecret } }, io) };
  }
  // The config requires the key's variable when there is no entra block.
  const variable = upstream.api_key_env!;
  const apiKey = io.env(variable) || undefined;
  if (!apiKey) return unset(variable);
  return { transport: azureTransport({ ...settings, auth: { kind: "api_key", apiKey } }, io) };
}

/** Bedrock with a Bedrock API key when the config names one, else with AWS credentials (a session token optional). */
function bedrockFrom(
  upstream: Extract<UpstreamConfig, { protocol: "anthropic-bedrock" }>,
  io: TransportIo,
): Credentialed {
  const value = (name: string) => io.env(name) || undefined;
  const settings = {
    name: upstream.name,
    baseUrl: upstream.base_url,
    region: upstream.region,
    betas: upstream.betas ?? BEDROCK_BETAS,
  };
  if (upstream.api_key_env) {
    const apiKey = value(upstream.api_key_env);
    if (!apiKey) return unset(upstream.api_key_env);
    return { transport: bedrockTransport({ ...settings, auth: { kind: "api_key", apiKey } }, io) };
  }
  const accessKeyId = value(upstream.aws_access_key_id_env);
  const secretAccessKey = value(upstream.aws_secret_access_key_env);
  if (!accessKeyId || !secretAccessKey) {
    return unset(
      ...(accessKeyId ? [] : [upstream.aws_access_key_id_env]),
      ...(secretAccessKey ? [] : [upstream.aws_secret_access_key_env]),
    );
  }
  const credentials = { accessKeyId, secretAccessKey, sessionToken: value(upstream.aws_session_token_env) };
  return { transport: bedrockTransport({ ...settings, auth: { kind: "sigv4", credentials } }, io) };
}

/** Vertex with the service account of the key file the config's variable names; the file is read once, here. */
function vertexFrom(
  upstream: Extract<UpstreamConfig, { protocol: "anthropic-vertex" | "gemini-vertex" }>,
  io: TransportIo,
): Credentialed {
  const variable = upstream.credentials_file_env;
  const file = io.env(variable);
  if (!file) return unset(variable);
  let account;
  try {
    account = parseServiceAccount(io.readTextFile(file));
  } catch (err) {
    // A read error names the path, which stays out of the message; a parse error names only the field at fault.
    const why = err instanceof SyntaxError || err instanceof TypeError ? ` (${err.message})` : "";
    return { problem: `${variable} names a file that cannot be used${why}` };
  }
  const tokens = serviceAccountTokens(account, { fetch: io.fetch, now: () => io.now().getTime() });
  const settings = {
    name: upstream.name,
    baseUrl: upstream.base_url,
    project: upstream.project,
    region: upstream.region,
    tokens,
    privateKey: account.private_key,
  };
  if (upstream.protocol === "gemini-vertex") return { transport: geminiVertexTransport(settings, io) };
  return { transport: vertexTransport({ ...settings, betas: upstream.betas ?? VERTEX_BETAS }, io) };
}

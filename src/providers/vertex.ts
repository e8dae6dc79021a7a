/**
 * @module Google Vertex AI as an Anthropic-protocol upstream: rawPredict and streamRawPredict (which answer as
 * the Anthropic API does) with a service-account access token, the Messages body as Vertex takes it, the
 * count-tokens endpoint for count_tokens, one retry with a fresh token after a 401, and Google's own error
 * bodies turned into Anthropic ones.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import type { TokenSource } from "./token_cache.ts";
import { sendWithToken } from "./token_send.ts";
import {
  acceptedBetas,
  anthropicErrorAnswer,
  CLOUD_BETAS,
  cloudErrorByStatus,
  estimateIfCountRefused,
  jsonOf,
  type Transport,
  type TransportCall,
} from "./transport.ts";

/** The only `anthropic_version` Vertex's Claude endpoints take in the body. */
const VERTEX_VERSION = "vertex-2023-10-16";

/** Betas Vertex accepts for Claude by default. */
export const VERTEX_BETAS: readonly string[] = CLOUD_BETAS;

/** One Vertex upstream as configured. */
export interface VertexSettings {
  name: string;
  /** e.g. https://us-east5-aiplatform.googleapis.com (no trailing slash, no /v1). */
  baseUrl: string;
  project: string;
  region: string;
  betas: readonly string[];
  tokens: TokenSource;
  /** The key file's private key, for redaction. */
  privateKey: string;
}

/** What the transport needs from outside. */
export interface VertexDeps {
  fetch: typeof fetch;
  log(line: Record<string, unknown>): void;
}

/** A Vertex answer as the Anthropic API would give it: Anthropic bodies pass, Google's error bodies are reshaped. */
async function vertexAnswer(res: Response): Promise<Response> {
  if (res.ok) return res;
  const body = await jsonOf(res);
  const headers = new Headers({ "content-type": "application/json" });
  for (const name of ["retry-after", "retry-after-ms"]) {
    const value = res.headers.get(name);
    if (value !== null) headers.set(name, value);
  }
  // The model's own errors (429, 529, 400 ...) already come in Anthropic's envelope.
  if (isObject(body) && body.type === "error") return Response.json(body, { status: res.status, headers });
  // Google's front end answers in its own shape ({"error": {"code", "message", "status"}}).
  const google = isObject(body) && isObject(body.error) ? body.error : {};
  const [status, type] = cloudErrorByStatus(res.status);
  const message = typeof google.message === "string" ? google.message : `Upstream answered ${res.status}`;
  return anthropicErrorAnswer(status, type, message, headers);
}

/** A Vertex transport. */
export function vertexTransport(settings: VertexSettings, deps: VertexDeps): Transport {
  const note = { upstream: settings.name, log: deps.log };
  const models = `${settings.baseUrl}/v1/projects/${encodeURIComponent(settings.project)}/locations/` +
    `${encodeURIComponent(settings.region)}/publishers/anthropic/models`;

  function request(call: TransportCall): { url: string; body: JsonObject; betas: string[] } {
    const betas = acceptedBetas(call, settings.betas, note);
    const { model: _model, anthropic_beta: _beta, ...rest } = call.body;
    if (call.operation === "count_tokens") {
      // Counting is one endpoint for every model: the model stays in the body.
      return {
        url: `${models}/count-tokens:rawPredict`,
        body: { ...rest, model: call.upstreamModel, anthropic_version: VERTEX_VERSION },
        betas,
      };
    }
    const method = call.body.stream === true ? "streamRawPredict" : "rawPredict";
    // Vertex model ids look like claude-sonnet-4-5@20250929; '@' stays as the official SDKs send it.
    const model = encodeURIComponent(call.upstreamModel).replaceAll("%40", "@");
    return { url: `${models}/${model}:${method}`, body: { ...rest, anthropic_version: VERTEX_VERSION }, betas };
  }

  return {
    async send(call) {
      const { url, body, betas } = request(call);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (betas.length > 0) headers["anthropic-beta"] = betas.join(",");
      const res = await vertexPost(settings, deps, { call, url, body, headers });
      // Counting is offered in some regions and for some models only.
      const estimate = call.operation === "count_tokens" ? await estimateIfCountRefused(res, call, note) : undefined;
      return estimate ?? await vertexAnswer(res);
    },
    secrets: () => [settings.privateKey, ...settings.tokens.current()],
  };
}

/** A POST to Vertex with the service account's access token; `headers` are the request's others. */
export async function vertexPost(
  settings: Pick<VertexSettings, "name" | "tokens">,
  deps: VertexDeps,
  request: { call: TransportCall; url: string; body: JsonObject; headers: Record<string, string> },
): Promise<Response> {
  const { call, url, headers } = request;
  const bytes = JSON.stringify(request.body);
  // A 401 means the token went bad before its time (revoked, or a clock that drifted): one fresh token, one retry.
  const upstream = { name: settings.name, tokens: settings.tokens, log: deps.log };
  return await sendWithToken(upstream, call, (access) =>
    deps.fetch(url, {
      method: "POST",
      headers: { ...headers, authorization: `Bearer ${access}` },
      body: bytes,
      signal: call.signal,
    }));
}

/**
 * @module Amazon Bedrock as an Anthropic-protocol upstream: InvokeModel (and its response stream) signed with
 * SigV4 for service "bedrock" or sent with a Bedrock API key, the Messages body reshaped as Bedrock takes it,
 * CountTokens for count_tokens, the embedding models' own bodies (Titan, Cohere) through InvokeModel, and every answer given back as the Anthropic API would give it.
 */
import type { JsonObject } from "../core/types.ts";
import { type AwsCredentials, signAwsV4 } from "./aws_sigv4.ts";
import { bedrockAnswer } from "./bedrock_answer.ts";
import {
  acceptedBetas,
  anthropicErrorAnswer,
  CLOUD_BETAS,
  estimateIfCountRefused,
  type Transport,
  type TransportCall,
} from "./transport.ts";

/** The only `anthropic_version` Bedrock's Messages API takes in the body. */
const BEDROCK_VERSION = "bedrock-2023-05-31";

/** Betas Bedrock's InvokeModel accepts for Claude (AWS lists them); it refuses a request with any other. */
export const BEDROCK_BETAS: readonly string[] = [
  ...CLOUD_BETAS,
  "dev-full-thinking-2025-05-14",
  "effort-2025-11-24",
  "tool-search-tool-2025-10-19",
  "tool-examples-2025-10-29",
];

/** How the gateway proves itself to Bedrock. */
export type BedrockAuth = { kind: "sigv4"; credentials: AwsCredentials } | { kind: "api_key"; apiKey: string };

/** One Bedrock upstream as configured. */
export interface BedrockSettings {
  name: string;
  /** e.g. https://bedrock-runtime.us-east-1.amazonaws.com (no trailing slash). */
  baseUrl: string;
  region: string;
  /** Betas passed on; others are left out. */
  betas: readonly string[];
  auth: BedrockAuth;
}

/** What the transport needs from outside. */
export interface BedrockDeps {
  fetch: typeof fetch;
  now(): Date;
  log(line: Record<string, unknown>): void;
}

/** Inference-profile ids start with a geography; CountTokens takes only the model id behind them. */
const PROFILE_PREFIX = /^(us|eu|apac|jp|au|ca|us-gov|global)\.(?=anthropic\.)/;

/** A Bedrock transport. */
export function bedrockTransport(settings: BedrockSettings, deps: BedrockDeps): Transport {
  const auth = settings.auth;
  const note = { upstream: settings.name, log: deps.log };

  /** The Messages body as InvokeModel takes it: no `model` or `stream`, Bedrock's version, betas in the body. */
  function invokeBody(call: TransportCall): JsonObject {
    const { model: _model, stream: _stream, ...body } = call.body;
    const betas = acceptedBetas(call, settings.betas, note);
    const out: JsonObject = { ...body, anthropic_version: BEDROCK_VERSION };
    delete out.anthropic_beta;
    if (betas.length > 0) out.anthropic_beta = betas;
    return out;
  }

  async function post(url: URL, body: JsonObject, accept: string, signal: AbortSignal): Promise<Response> {
    const bytes = new TextEncoder().encode(JSON.stringify(body));
    const headers: Record<string, string> = { "content-type": "application/json", accept };
    if (auth.kind === "api_key") headers.authorization = `Bearer ${auth.apiKey}`;
    else {
      const signed = await signAwsV4(
        {
          method: "POST",
          path: url.pathname,
          query: "",
          headers: [["host", url.host], ...Object.entries(headers)],
          body: bytes,
        },
        { credentials: auth.credentials, region: settings.region, service: "bedrock", date: deps.now() },
      );
      Object.assign(headers, signed);
    }
    return await deps.fetch(url, { method: "POST", headers, body: bytes, signal });
  }

  function modelUrl(model: string, action: string): URL {
    // The id may hold ':' (anthropic.claude-...-v1:0) or be an ARN with '/': one encoded path segment either way.
    return new URL(`${settings.baseUrl}/model/${encodeURIComponent(model)}/${action}`);
  }

  async function countTokens(call: TransportCall): Promise<Response> {
    const invoke = invokeBody(call);
    // InvokeModel requires max_tokens; count_tokens bodies have none, and the count does not depend on it.
    invoke.max_tokens ??= 1;
    const encoded = new TextEncoder().encode(JSON.stringify(invoke)).toBase64();
    const model = call.upstreamModel.replace(PROFILE_PREFIX, "");
    const res = await post(
      modelUrl(model, "count-tokens"),
      { input: { invokeModel: { body: encoded } } },
      "application/json",
      call.signal,
    );
    if (res.ok) {
      const body = await res.json().catch(() => undefined) as JsonObject | undefined;
      if (typeof body?.inputTokens === "number") return Response.json({ input_tokens: body.inputTokens });
      return anthropicErrorAnswer(502, "api_error", `Upstream "${settings.name}" answered a count without inputTokens`);
    }
    return await estimateIfCountRefused(res, call, note) ?? bedrockAnswer(res, false);
  }

  return {
    async send(call) {
      if (call.operation === "count_tokens") return await countTokens(call);
      // An embedding model's body is already its own (Titan's or Cohere's: see translate/embeddings_request.ts).
      if (call.operation === "embed") {
        const url = modelUrl(call.upstreamModel, "invoke");
        return bedrockAnswer(await post(url, call.body, "application/json", call.signal), false);
      }
      const stream = call.body.stream === true;
      const url = modelUrl(call.upstreamModel, stream ? "invoke-with-response-stream" : "invoke");
      const accept = stream ? "application/vnd.amazon.eventstream" : "application/json";
      return bedrockAnswer(await post(url, invokeBody(call), accept, call.signal), stream);
    },
    secrets: () =>
      auth.kind === "api_key"
        ? [auth.apiKey]
        : [auth.credentials.secretAccessKey, ...(auth.credentials.sessionToken ? [auth.credentials.sessionToken] : [])],
  };
}

/**
 * @module One upstream's config, per kind: an API with a key (Anthropic, OpenAI or compatible, Gemini), Azure OpenAI
 * (a key or Microsoft Entra ID), Claude on Amazon Bedrock, Claude or Gemini on Google Vertex AI, or the built-in
 * demo. Every kind shares the routing, timeout and model keys; a cloud's base URL follows from its region when the
 * config gives none.
 */
import { z } from "zod";
import { PriceSchema } from "./money.ts";

const Model = z.union([
  z.string().min(1),
  z.strictObject({
    id: z.string().min(1),
    upstream_id: z.string().min(1).optional(),
    display_name: z.string().min(1).optional(),
    created_at: z.iso.datetime().optional(),
    /** The most tokens a prompt may have, as model listings say it (Gemini's `inputTokenLimit`). */
    context_window: z.number().int().positive().optional(),
    /** Largest output the model gives: its listings say it, and translated requests asking more are lowered to it. */
    max_output_tokens: z.number().int().positive().optional(),
    /** What this deployment costs per million tokens; a model without one is recorded as unpriced. */
    price: PriceSchema.optional(),
    /** What the model does: answers (`chat`, the default) or embeddings (`embedding`, served by POST /v1/embeddings). */
    kind: z.enum(["chat", "embedding"]).optional(),
  }),
]);

/** What a configured model does: `chat` unless its entry says `kind: embedding`. */
export type ModelKind = "chat" | "embedding";

/** The kind of one entry of an upstream's `models`. */
export function modelKind(entry: z.infer<typeof Model>): ModelKind {
  return typeof entry === "string" ? "chat" : entry.kind ?? "chat";
}

/**
 * Refuses `kind: embedding` on an upstream kind that has no embeddings API (Anthropic's, Claude on Vertex, the demo);
 * Bedrock's serve only the embedding models whose bodies the gateway knows (see docs/protocols.md, "Embeddings").
 */
function embeddingsServed(
  upstream: { protocol: string; models: z.infer<typeof Model>[] },
  ctx: z.RefinementCtx,
): void {
  upstream.models.forEach((entry, i) => {
    if (modelKind(entry) !== "embedding" || typeof entry === "string") return;
    const path = ["models", i, "kind"];
    if (NO_EMBEDDINGS.has(upstream.protocol)) {
      ctx.addIssue({
        code: "custom",
        path,
        message: `cannot be embedding: ${upstream.protocol} has no embeddings API`,
      });
    } else if (upstream.protocol === "anthropic-bedrock" && !BEDROCK_EMBEDDINGS.test(entry.upstream_id ?? entry.id)) {
      ctx.addIssue({
        code: "custom",
        path,
        message:
          "cannot be embedding for this id: Bedrock embeddings are amazon.titan-embed-text-v2 and cohere.embed-*",
      });
    }
  });
}

/** The upstream kinds without an embeddings API (Claude on Vertex is a partner model: it has none). */
const NO_EMBEDDINGS = new Set(["anthropic", "anthropic-vertex", "demo"]);

/** The Bedrock model ids whose embedding bodies the gateway speaks (an inference profile's geography allowed). */
export const BEDROCK_EMBEDDINGS = /^(?:[a-z-]+\.)?(?:amazon\.titan-embed-text-v2|cohere\.embed-)/;

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");
const BaseUrl = z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, ""));
/** Cloud regions and project ids end up in URLs: letters, digits and a few separators, never a '/'. */
const PathPart = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/, "must be letters, digits, '-', '_', '.' or ':'");

/** Keys every upstream kind takes. */
const COMMON = {
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be letters, digits, '_', '.' or '-'"),
  models: z.array(Model).min(1),
  /** Higher tiers are tried first; failover moves down a tier only when the higher one is spent. */
  priority: z.number().int().default(0),
  /** Share of traffic within its priority tier. */
  weight: z.number().positive().default(1),
  /** Milliseconds until the upstream's response headers (and a non-streamed body) arrive. */
  timeout_ms: z.number().int().positive().default(600_000),
  /** Longest silence between two stream chunks before the stream is failed as timed out. */
  idle_timeout_ms: z.number().int().positive().default(300_000),
  /** Longest whole exchange with the upstream, stream included. */
  total_timeout_ms: z.number().int().positive().default(1_800_000),
  /** Largest non-streamed answer taken from the upstream, in bytes; a larger one is a 502 (docs/operating.md). */
  max_answer_bytes: z.number().int().min(1024).max(1024 * 1024 * 1024).default(32 * 1024 * 1024),
  /** `max_tokens` sent to an Anthropic upstream when an OpenAI client omits it. */
  default_max_tokens: z.number().int().positive().default(4096),
  /** Largest `max_tokens` the upstream's models accept; translated requests asking more are lowered to it. */
  max_output_tokens: z.number().int().positive().optional(),
  /** The field a translated request's output limit goes in: OpenAI's reasoning models refuse `max_tokens`. */
  max_tokens_field: z.enum(["max_tokens", "max_completion_tokens"]).default("max_tokens"),
  /** Whether the upstream's models take `reasoning_effort`; other models refuse it, so thinking is then dropped. */
  reasoning_effort: z.boolean().default(false),
  /** Whether the upstream takes freeform (`custom`) tools as they are, as OpenAI does; else they are sent as functions. */
  native_custom_tools: z.boolean().default(false),
};

/** The betas a cloud is sent, replacing the gateway's list for that cloud; others are left out of requests. */
const Betas = z.array(z.string().regex(/^[a-z0-9-]+$/, "must be a beta name such as interleaved-thinking-2025-05-14"));

const KeyedUpstream = z.strictObject({
  ...COMMON,
  protocol: z.enum(["anthropic", "openai", "openai-responses", "gemini"]),
  base_url: BaseUrl,
  api_key_env: EnvName,
  /**
   * Whether an `openai` upstream has OpenAI's Files and Batch APIs, so batches go to it natively: by default only
   * api.openai.com does, not the compatible services.
   */
  batch_api: z.boolean().optional(),
}).superRefine(embeddingsServed);

const BedrockUpstream = z.strictObject({
  ...COMMON,
  protocol: z.literal("anthropic-bedrock"),
  region: PathPart,
  base_url: BaseUrl.optional(),
  aws_access_key_id_env: EnvName.default("AWS_ACCESS_KEY_ID"),
  aws_secret_access_key_env: EnvName.default("AWS_SECRET_ACCESS_KEY"),
  aws_session_token_env: EnvName.default("AWS_SESSION_TOKEN"),
  /** A Bedrock API key, sent as a bearer token instead of signing, when this names its variable. */
  api_key_env: EnvName.optional(),
  betas: Betas.optional(),
}).superRefine(embeddingsServed).transform((upstream) => ({
  ...upstream,
  base_url: upstream.base_url ?? `https://bedrock-runtime.${upstream.region}.amazonaws.com`,
}));

/** Where a Vertex upstream is and whose service account reaches it. */
const VERTEX = {
  project: PathPart,
  region: PathPart,
  base_url: BaseUrl.optional(),
  /** The variable that names a service-account key file. */
  credentials_file_env: EnvName.default("GOOGLE_APPLICATION_CREDENTIALS"),
};

const VertexUpstream = z.strictObject({
  ...COMMON,
  ...VERTEX,
  protocol: z.literal("anthropic-vertex"),
  betas: Betas.optional(),
}).superRefine(embeddingsServed).transform((upstream) => ({
  ...upstream,
  base_url: upstream.base_url ?? vertexBaseUrl(upstream.region),
}));

/** Gemini on Vertex AI: the same service account and endpoint, Google's own models. */
const GeminiVertexUpstream = z.strictObject({ ...COMMON, ...VERTEX, protocol: z.literal("gemini-vertex") })
  .transform((upstream) => ({ ...upstream, base_url: upstream.base_url ?? vertexBaseUrl(upstream.region) }));

/** Vertex's endpoint for a region: the global one, a multi-region one ("us", "eu"), or the region's own. */
function vertexBaseUrl(region: string): string {
  if (region === "global") return "https://aiplatform.googleapis.com";
  if (region === "us" || region === "eu") return `https://aiplatform.${region}.rep.googleapis.com`;
  return `https://${region}-aiplatform.googleapis.com`;
}

/** Microsoft Entra ID client credentials: the gateway's app registration, its secret in a variable. */
const Entra = z.strictObject({
  /** The directory's id (a GUID) or one of its domain names; it becomes a path segment of the token URL. */
  tenant_id: PathPart,
  client_id: z.string().min(1),
  client_secret_env: EnvName,
  /** The sign-in host: a sovereign cloud has its own (login.microsoftonline.us, login.chinacloudapi.cn). */
  authority: BaseUrl.default("https://login.microsoftonline.com"),
  /** The scope the token is for: Azure OpenAI's, or Foundry's (https://ai.azure.com/.default). */
  scope: z.string().min(1).default("https://cognitiveservices.azure.com/.default"),
});

/**
 * Azure OpenAI's v1 API: OpenAI's paths under the resource's `/openai/v1`, the deployment name as the model, no
 * `api-version`. `api` says which of its APIs the models are reached through.
 */
const AzureUpstream = z.strictObject({
  ...COMMON,
  protocol: z.literal("azure-openai"),
  base_url: BaseUrl.refine((url) => !url.includes("?"), {
    message: "must not have a query: the v1 API (https://{resource}.openai.azure.com/openai/v1) takes no api-version",
  }).refine((url) => !/\/deployments(\/|$)/.test(url), {
    message: "must not name a deployment: the v1 API takes the deployment name as a model's upstream_id",
  }),
  api: z.enum(["responses", "chat"]).default("responses"),
  api_key_env: EnvName.optional(),
  entra: Entra.optional(),
}).superRefine((upstream, ctx) => {
  // Exactly one credential: both would leave which one is used to guesswork.
  if (upstream.api_key_env !== undefined && upstream.entra !== undefined) {
    ctx.addIssue({ code: "custom", path: ["entra"], message: "cannot be combined with api_key_env: choose one" });
  } else if (upstream.api_key_env === undefined && upstream.entra === undefined) {
    ctx.addIssue({ code: "custom", path: ["api_key_env"], message: "is required (or entra, for Microsoft Entra ID)" });
  }
});

/** What marks a demo model's id, so a listing or a log line never passes one off as a provider's model. */
export const DEMO_MODEL_PREFIX = "demo-";

/**
 * The demo upstream built into the gateway: it answers by itself, with no network and no key (see
 * docs/configuration.md, "The demo upstream"). Its models' ids start with "demo-".
 */
const DemoUpstream = z.strictObject({ ...COMMON, protocol: z.literal("demo") }).superRefine((upstream, ctx) => {
  embeddingsServed(upstream, ctx);
  upstream.models.forEach((model, i) => {
    const id = typeof model === "string" ? model : model.id;
    if (id.startsWith(DEMO_MODEL_PREFIX)) return;
    const path = typeof model === "string" ? ["models", i] : ["models", i, "id"];
    ctx.addIssue({
      code: "custom",
      path,
      message: `must start with "${DEMO_MODEL_PREFIX}": a demo model says it is one`,
    });
  });
}).transform((upstream) => ({ ...upstream, base_url: "builtin:demo" }));

/** One upstream, by the protocol it is reached with. */
export const UpstreamSchema = z.discriminatedUnion("protocol", [
  KeyedUpstream,
  AzureUpstream,
  BedrockUpstream,
  VertexUpstream,
  GeminiVertexUpstream,
  DemoUpstream,
]);

/** One upstream as configured, with defaults applied and its base URL known. */
export type UpstreamConfig = z.infer<typeof UpstreamSchema>;

/** Refuses a model id that is an embedding model on one upstream and a chat model on another: its kind is one. */
export function sameKinds(upstreams: readonly UpstreamConfig[], ctx: z.RefinementCtx): void {
  const kinds = new Map<string, ModelKind>();
  upstreams.forEach((upstream, u) => {
    upstream.models.forEach((entry, i) => {
      const id = typeof entry === "string" ? entry : entry.id;
      const kind = modelKind(entry);
      const seen = kinds.get(id);
      if (seen === undefined) kinds.set(id, kind);
      else if (seen !== kind) {
        ctx.addIssue({
          code: "custom",
          path: [u, "models", i],
          message: `is ${kind} here but ${seen} on an earlier upstream: a model id has one kind`,
        });
      }
    });
  });
}

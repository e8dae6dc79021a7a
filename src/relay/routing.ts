/**
 * @module Model routing as data: the table of which upstreams serve each public model id, built once from
 * the config, plus the group check and the model listing with Anthropic-style pagination.
 */
import type { Config, UpstreamConfig } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { Price } from "../core/money.ts";
import type { Group } from "../core/principal.ts";
import { invalidField } from "../core/validation.ts";
import type { UpstreamProtocol } from "../core/types.ts";
import { type ModelKind, modelKind } from "../core/upstream_config.ts";
import type { Transport } from "../providers/mod.ts";

/** One way to serve a public model id: a deployment, whose health is tracked on its own. */
export interface ModelRoute {
  /** The public model id. */
  model: string;
  upstream: UpstreamConfig;
  /** The protocol the upstream speaks. */
  protocol: UpstreamProtocol;
  /** The id the upstream knows the model by. */
  upstreamModel: string;
  /** How requests reach the upstream; undefined when its credentials are missing (the route then answers 503). */
  transport: Transport | undefined;
  /** Copied from the upstream: try order and share of traffic. */
  priority: number;
  weight: number;
  /** What this deployment charges per million tokens, when the config prices it. */
  price?: Price;
  /** The largest output of the model here: its own `max_output_tokens`, else its upstream's. */
  maxOutputTokens?: number;
  /** What the model does: `chat`, or `embedding` (served by the embeddings endpoints only). */
  kind: ModelKind;
}

/** A listed model's metadata. */
export interface ModelInfo {
  id: string;
  display_name: string;
  created_at: string;
  owned_by: string;
  /** The most tokens a prompt may have, and the most the model answers with (its first entry's, else the defaults). */
  context_window: number;
  max_output_tokens: number;
  /** What it does: answers, or embeddings (the Gemini listing names the methods that serve it). */
  kind: ModelKind;
}

/** What a model's listing says when its config does not: a common context window and a modest output. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;
export const DEFAULT_MAX_OUTPUT_TOKENS = 8_192;

/** Public model id -> routes (config order) and listing metadata. */
export interface RouteTable {
  routes: ReadonlyMap<string, readonly ModelRoute[]>;
  models: ReadonlyMap<string, ModelInfo>;
}

/** True when some upstream with a key serves `model` (groups may only name such models). */
export function serves(table: RouteTable, model: string): boolean {
  return (table.routes.get(model)?.length ?? 0) > 0;
}

/** The protocol each kind of upstream speaks: the clouds serve Claude through the Messages protocol. */
const UPSTREAM_PROTOCOL: Record<Exclude<UpstreamConfig["protocol"], "azure-openai">, UpstreamProtocol> = {
  anthropic: "anthropic",
  openai: "openai-chat",
  "openai-responses": "openai-responses",
  gemini: "gemini",
  "anthropic-bedrock": "anthropic",
  "anthropic-vertex": "anthropic",
  "gemini-vertex": "gemini",
  demo: "anthropic",
};

/** The protocol one upstream speaks: its kind's, or for Azure OpenAI the API its config chose. */
export function upstreamProtocol(upstream: UpstreamConfig): UpstreamProtocol {
  if (upstream.protocol === "azure-openai") return upstream.api === "chat" ? "openai-chat" : "openai-responses";
  return UPSTREAM_PROTOCOL[upstream.protocol];
}

/** Options for {@linkcode buildRouteTable}. */
export interface RouteTableOptions {
  /** When each model was first served (ISO), for models the config gives no `created_at`. */
  firstServed?: ReadonlyMap<string, string>;
  /** The listing date of a model neither the config nor `firstServed` dates: now, by default. */
  now?: Date;
}

/** Builds the table from the config and each upstream's transport (undefined when it has no credentials). */
export function buildRouteTable(
  config: Config,
  transportOf: (upstream: UpstreamConfig) => Transport | undefined,
  options: RouteTableOptions = {},
): RouteTable {
  const undated = (options.now ?? new Date()).toISOString();
  const routes = new Map<string, ModelRoute[]>();
  const models = new Map<string, ModelInfo>();
  for (const upstream of config.upstreams) {
    const transport = transportOf(upstream);
    for (const entry of upstream.models) {
      const model = typeof entry === "string" ? { id: entry } : entry;
      const route = {
        model: model.id,
        upstream,
        protocol: upstreamProtocol(upstream),
        upstreamModel: "upstream_id" in model && model.upstream_id ? model.upstream_id : model.id,
        transport,
        priority: upstream.priority,
        weight: upstream.weight,
        price: "price" in model ? model.price : undefined,
        maxOutputTokens: ("max_output_tokens" in model && model.max_output_tokens) || upstream.max_output_tokens,
        kind: modelKind(entry),
      };
      routes.set(model.id, [...(routes.get(model.id) ?? []), route]);
      if (!models.has(model.id)) {
        models.set(model.id, {
          id: model.id,
          display_name: ("display_name" in model && model.display_name) || model.id,
          // Clients show this date: the configured one, else when the gateway first served the model, never 1970.
          created_at: "created_at" in model && model.created_at
            ? new Date(model.created_at).toISOString()
            : options.firstServed?.get(model.id) ?? undated,
          owned_by: upstream.name,
          context_window: ("context_window" in model && model.context_window) || DEFAULT_CONTEXT_WINDOW,
          max_output_tokens: route.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
          kind: route.kind,
        });
      }
    }
  }
  return { routes, models };
}

/** Each upstream's public model ids, in config order: its deployments, as health reports them. */
export function deploymentsByUpstream(config: Config): Map<string, string[]> {
  const layout = new Map<string, string[]>();
  for (const upstream of config.upstreams) {
    const ids = upstream.models.map((model) => typeof model === "string" ? model : model.id);
    layout.set(upstream.name, [...new Set(ids)]);
  }
  return layout;
}

/**
 * The routes for a model the group enables; 404 otherwise, pointing at `listing`, the listing of the client's own API
 * (a Gemini client's is GET /v1beta/models).
 */
export function resolveRoutes(
  table: RouteTable,
  group: Group,
  model: string,
  listing = "GET /v1/models",
): readonly ModelRoute[] {
  const routes = group.models.includes(model) ? table.routes.get(model) : undefined;
  if (!routes?.length) {
    throw new GatewayError(
      "not_found",
      `model: ${JSON.stringify(model)} is not available to this API key; check ${listing} for the models you can use`,
      { param: "model" },
    );
  }
  return routes;
}

/**
 * Refuses a model of the wrong kind for the endpoint (`kind` is what the endpoint serves): a chat request to an
 * embedding model, or an embeddings request to a chat model, would get the upstream's puzzling error instead.
 */
export function requireKind(routes: readonly ModelRoute[], kind: ModelKind, model: string): void {
  const found = routes[0]?.kind ?? "chat";
  if (found === kind) return;
  const served = found === "embedding" ? "the embeddings endpoints (POST /v1/embeddings)" : "the generation endpoints";
  throw new GatewayError(
    "invalid_request",
    `model: ${JSON.stringify(model)} is ${
      found === "embedding" ? "an embedding" : "a chat"
    } model; it is served by ${served}`,
    { param: "model", code: "model_kind_mismatch" },
  );
}

/** The models a group enables, in the group's order. */
export function listModels(table: RouteTable, group: Group): ModelInfo[] {
  return group.models.flatMap((id) => table.models.get(id) ?? []);
}

/** One page of a listing, in the Anthropic API's shape. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

/** Anthropic pagination: `limit` (1 to 1000, default 20), `after_id`, `before_id`. */
export function paginate<T extends { id: string }>(items: readonly T[], query: URLSearchParams): Page<T> {
  const rawLimit = query.get("limit");
  const limit = rawLimit === null ? 20 : Number(rawLimit);
  if (!/^\d+$/.test(rawLimit ?? "20") || limit < 1 || limit > 1000) {
    throw invalidField("limit", "must be an integer from 1 to 1000");
  }
  const afterId = query.get("after_id");
  const beforeId = query.get("before_id");
  if (afterId !== null && beforeId !== null) throw invalidField("before_id", "cannot be combined with after_id");
  let start = 0;
  let end = items.length;
  if (afterId !== null) {
    const at = items.findIndex((item) => item.id === afterId);
    if (at === -1) throw invalidField("after_id", `unknown model id ${JSON.stringify(afterId)}`);
    start = at + 1;
    end = Math.min(items.length, start + limit);
  } else if (beforeId !== null) {
    end = items.findIndex((item) => item.id === beforeId);
    if (end === -1) throw invalidField("before_id", `unknown model id ${JSON.stringify(beforeId)}`);
    start = Math.max(0, end - limit);
  } else {
    end = Math.min(items.length, limit);
  }
  const data = items.slice(start, end);
  // Auto-pagination follows has_more in the direction of travel: forward for after_id, back for before_id.
  const hasMore = beforeId !== null ? start > 0 : end < items.length;
  return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

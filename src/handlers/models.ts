/**
 * @module GET /v1/models and /v1/models/{id}: the models the token's group enables, in the group's shape, or in
 * Gemini's for a request that comes from a Gemini client.
 */
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import type { Principal } from "../core/principal.ts";
import type { Protocol } from "../core/types.ts";
import { listModels, type ModelInfo, paginate } from "../relay/routing.ts";
import type { RequestContext } from "./context.ts";
import { getGeminiModel, listGeminiModels } from "./gemini.ts";

/** True for a request from a Gemini client: its SDKs send the key as x-goog-api-key or ?key=, and x-goog-api-client. */
export function fromGeminiClient(req: Request): boolean {
  return req.headers.has("x-goog-api-key") || req.headers.has("x-goog-api-client") ||
    new URL(req.url).searchParams.has("key");
}

/**
 * The shape of the listing and its errors: the group's, with `auto` following the request (Anthropic when it
 * carries anthropic-version). Before the caller is known: Anthropic when it sent x-api-key or anthropic-version.
 */
export function listingProtocol(req: Request, principal?: Principal): Protocol {
  if (fromGeminiClient(req)) return "gemini";
  const anthropicHeaders = req.headers.has("anthropic-version") || req.headers.has("vendorx-version");
  const listing = principal?.group.listing ?? (anthropicHeaders || req.headers.has("x-api-key") ? "anthropic" : "auto");
  if (listing === "auto") return anthropicHeaders ? "anthropic" : "openai-chat";
  return listing === "anthropic" ? "anthropic" : "openai-chat";
}

function anthropicEntry(model: ModelInfo) {
  return { id: model.id, type: "model", display_name: model.display_name, created_at: model.created_at };
}

function openaiEntry(model: ModelInfo) {
  return {
    id: model.id,
    object: "model",
    created: Math.floor(Date.parse(model.created_at) / 1000),
    owned_by: model.owned_by,
  };
}

/** GET /v1/models */
export async function listModelsHandler(req: Request, ctx: RequestContext): Promise<Response> {
  if (fromGeminiClient(req)) return await listGeminiModels(req, ctx);
  const principal = await ctx.authenticate();
  const models = listModels(ctx.deps.table, principal.group);
  if (listingProtocol(req, principal) === "openai-chat") {
    return json({ object: "list", data: models.map(openaiEntry) });
  }
  const page = paginate(models, new URL(req.url).searchParams);
  return json({ ...page, data: page.data.map(anthropicEntry) });
}

/** GET /v1/models/{id} */
export async function getModel(req: Request, ctx: RequestContext): Promise<Response> {
  if (fromGeminiClient(req)) return await getGeminiModel(req, ctx);
  const principal = await ctx.authenticate();
  const model = listModels(ctx.deps.table, principal.group).find((m) => m.id === ctx.params.id);
  if (!model) {
    throw new GatewayError("not_found", `model: ${JSON.stringify(ctx.params.id)} is not available to this API key`, {
      param: "model",
    });
  }
  return json(listingProtocol(req, principal) === "openai-chat" ? openaiEntry(model) : anthropicEntry(model));
}

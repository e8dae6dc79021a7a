/**
 * @module The Gemini API's endpoints: `models/{model}:generateContent`, `:streamGenerateContent` (SSE or a JSON
 * array), `:countTokens`, `:embedContent` and `:batchEmbedContents` (embeddings.ts), and the model listing in Gemini's shape, under /v1beta, /v1alpha and /v1.
 */
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { SseParser } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { tokenCount } from "../core/usage.ts";
import { invalidField } from "../core/validation.ts";
import { listModels, type ModelInfo } from "../relay/routing.ts";
import type { Endpoint, RequestContext } from "./context.ts";
import { geminiEmbeddings } from "./embeddings.ts";
import { generate } from "./generate.ts";

/** What Gemini's model resource says of a model the group enables. */
function geminiModel(model: ModelInfo): JsonObject {
  return {
    name: `models/${model.id}`,
    baseModelId: model.id,
    version: model.created_at.slice(0, 10),
    displayName: model.display_name,
    description: `${model.display_name}, served by ${model.owned_by} through the gateway`,
    inputTokenLimit: model.context_window,
    outputTokenLimit: model.max_output_tokens,
    supportedGenerationMethods: model.kind === "embedding"
      ? ["embedContent", "batchEmbedContents"]
      : ["generateContent", "streamGenerateContent", "countTokens"],
  };
}

/** `pageToken` is the last model id of the previous page, base64url-encoded, so it is opaque as Google's are. */
function pageStart(models: readonly ModelInfo[], token: string | null): number {
  if (!token) return 0;
  let id: string;
  try {
    id = new TextDecoder().decode(Uint8Array.fromBase64(token, { alphabet: "base64url" }));
  } catch {
    throw invalidField("pageToken", "is not a page token this listing gave");
  }
  const at = models.findIndex((m) => m.id === id);
  if (at === -1) throw invalidField("pageToken", "is not a page token this listing gave");
  return at + 1;
}

function pageToken(id: string): string {
  return new TextEncoder().encode(id).toBase64({ alphabet: "base64url", omitPadding: true });
}

/** GET .../models in Gemini's shape: `pageSize` (default 50, at most 1000) and `pageToken`. */
export async function listGeminiModels(req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const models = listModels(ctx.deps.table, principal.group);
  const query = new URL(req.url).searchParams;
  const rawSize = query.get("pageSize");
  if (rawSize !== null && !/^\d+$/.test(rawSize)) throw invalidField("pageSize", "must be a non-negative integer");
  const size = Math.min(1000, Number(rawSize ?? 0) || 50);
  const start = pageStart(models, query.get("pageToken"));
  const page = models.slice(start, start + size);
  const body: JsonObject = { models: page.map(geminiModel) };
  if (start + size < models.length && page.length > 0) body.nextPageToken = pageToken(page.at(-1)!.id);
  return json(body);
}

/** GET .../models/{model} in Gemini's shape. */
export async function getGeminiModel(_req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const id = ctx.params.id.replace(/^models\//, "");
  const model = listModels(ctx.deps.table, principal.group).find((m) => m.id === id);
  if (!model) throw new GatewayError("not_found", `models/${id} is not found or not available to this API key`);
  return json(geminiModel(model));
}

/** The body a model action relays: the client's, with the model from the path and whether to stream. */
function withModel(model: string, stream: boolean, counting = false) {
  return (body: JsonObject): JsonObject => {
    // countTokens takes either the prompt itself or a whole generateContent request.
    const request = counting && isObject(body.generateContentRequest) ? body.generateContentRequest : body;
    return { ...request, model, stream };
  };
}

/** Re-frames the gateway's Gemini SSE as the JSON array `streamGenerateContent` answers without `alt=sse`. */
function asJsonArray(res: Response): Response {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let opened = false;
  const frame = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, out) {
      for (const message of parser.push(decoder.decode(chunk, { stream: true }))) {
        out.enqueue(encoder.encode(`${opened ? ",\r\n" : "["}${message.data}`));
        opened = true;
      }
    },
    flush(out) {
      out.enqueue(encoder.encode(opened ? "]" : "[]"));
    },
  });
  const headers = new Headers(res.headers);
  headers.set("content-type", "application/json");
  return new Response(res.body!.pipeThrough(frame), { status: res.status, headers });
}

/** countTokens: the upstream's count, or the gateway's estimate where no upstream counts, as `{totalTokens}`. */
async function countTokens(req: Request, ctx: RequestContext, model: string): Promise<Response> {
  const res = await generate("gemini", "count_tokens", { reshape: withModel(model, false, true) })(req, ctx);
  if (!res.ok) return res;
  const body = await res.json();
  if (isObject(body) && "totalTokens" in body) return json(body);
  return json({ totalTokens: tokenCount(isObject(body) ? body.input_tokens : 0) });
}

/** The actions of POST .../models/{model}:{action} the gateway serves. */
const GEMINI_ACTIONS = new Set([
  "generateContent",
  "streamGenerateContent",
  "countTokens",
  "embedContent",
  "batchEmbedContents",
]);

/** POST .../models/{model}:{action}. */
export function geminiModelAction(req: Request, ctx: RequestContext): Promise<Response> {
  const id = ctx.params.id.replace(/^models\//, "");
  const colon = id.lastIndexOf(":");
  const model = colon === -1 ? id : id.slice(0, colon);
  const action = colon === -1 ? "" : id.slice(colon + 1);
  // The route names the action, so the request log, usage and metrics tell a generation from a count or an embedding.
  if (GEMINI_ACTIONS.has(action)) ctx.exchange.route = `${ctx.exchange.route}:${action}`;
  switch (action) {
    case "generateContent":
      return generate("gemini", "generate", { reshape: withModel(model, false) })(req, ctx);
    case "streamGenerateContent": {
      const sse = new URL(req.url).searchParams.get("alt") === "sse";
      const answer = generate("gemini", "generate", { reshape: withModel(model, true) })(req, ctx);
      return sse ? answer : answer.then((res) => res.ok && res.body ? asJsonArray(res) : res);
    }
    case "countTokens":
      return countTokens(req, ctx, model);
    case "embedContent":
    case "batchEmbedContents":
      return geminiEmbeddings(model, action === "batchEmbedContents")(req, ctx);
    default:
      throw new GatewayError("not_found", `Method not found: ${JSON.stringify(action)} on models/${model}`);
  }
}

const gemini = () => "gemini" as const;

/** The Gemini routes under each API version the SDKs call; GET /v1/models is the shared listing's (see models.ts). */
export const GEMINI_ENDPOINTS: readonly Endpoint[] = [
  ...["/v1beta", "/v1alpha"].flatMap((version): Endpoint[] => [
    { method: "GET", path: `${version}/models`, errors: gemini, handle: listGeminiModels },
    { method: "GET", path: `${version}/models/:id`, errors: gemini, handle: getGeminiModel },
    { method: "POST", path: `${version}/models/:id`, errors: gemini, handle: geminiModelAction },
  ]),
  { method: "POST", path: "/v1/models/:id", errors: gemini, handle: geminiModelAction },
];

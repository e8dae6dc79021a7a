/**
 * @module The embeddings endpoints: POST /v1/embeddings in OpenAI's shape, and the Gemini API's `:embedContent` and
 * `:batchEmbedContents` (under /v1beta and /v1, through gemini.ts). Each reads its client's request, refuses a bad one
 * or a model that is not an embedding model before any upstream call, admits it against the caller's limits, and
 * relays it with failover; each deployment's calls are made by relay/embed.ts.
 */
import { readJsonBody } from "../core/request_body.ts";
import type { JsonObject, Protocol } from "../core/types.ts";
import type { EmbedInput, EmbedRequest } from "../protocols/embeddings.ts";
import { readGeminiEmbedRequest } from "../protocols/gemini_embeddings.ts";
import { readOpenAiEmbedRequest } from "../protocols/openai_embeddings.ts";
import { type EmbedResult, geminiEmbedAnswer, openAiEmbedAnswer } from "../translate/embeddings_answer.ts";
import { embedAttempt } from "../relay/embed.ts";
import { relay } from "../relay/relay.ts";
import { requireKind, resolveRoutes } from "../relay/routing.ts";
import type { RequestContext } from "./context.ts";
import { guardRequest } from "./guard.ts";

/** What tells one client shape from the other. */
interface EmbedClient {
  /** The protocol its errors are spoken in. */
  protocol: Protocol;
  /** The model listing of its API, which a 404 points to. */
  listing: string;
  /** Its name for the vector length. */
  dimensionsField: string;
  /** The upstream shape whose error bodies it reads as its own. */
  own: string;
  /** Floats asked of an OpenAI-shaped upstream, when the client takes nothing else. */
  encoding?: "float";
  read(body: JsonObject): EmbedRequest;
  answer(request: EmbedRequest, result: EmbedResult): JsonObject;
}

/** POST /v1/embeddings. */
export function openAiEmbeddings(req: Request, ctx: RequestContext): Promise<Response> {
  return embed(req, ctx, {
    protocol: "openai-chat",
    listing: "GET /v1/models",
    dimensionsField: "dimensions",
    own: "openai",
    read: readOpenAiEmbedRequest,
    answer: openAiEmbedAnswer,
  });
}

/** POST .../models/{model}:embedContent (`batch` false) or :batchEmbedContents (`batch` true). */
export function geminiEmbeddings(model: string, batch: boolean) {
  return (req: Request, ctx: RequestContext): Promise<Response> =>
    embed(req, ctx, {
      protocol: "gemini",
      listing: "GET /v1beta/models",
      dimensionsField: batch ? "requests[0].outputDimensionality" : "outputDimensionality",
      own: "gemini",
      encoding: "float",
      read: (body) => readGeminiEmbedRequest(model, body, batch),
      answer: (_request, result) => geminiEmbedAnswer(result, batch),
    });
}

async function embed(req: Request, ctx: RequestContext, client: EmbedClient): Promise<Response> {
  const principal = await ctx.authenticate();
  const { config } = ctx.deps;
  const { value, bytes } = await readJsonBody(req, {
    maxBytes: config.max_body_bytes,
    idleMs: config.body_idle_timeout_ms,
    hold: ctx.holdBody(),
    watchdog: ctx.deps.watchdog,
  });
  const { exchange } = ctx;
  // Only a model the group enables is recorded (anything else is client input), before the body's check.
  const read = client.read(value);
  if (principal.group.models.includes(read.model)) exchange.model = read.model;
  // Before any upstream gets them, the texts to embed pass the group's input guardrails (see guardrails.md).
  const guarded = await guardRequest(ctx.deps.guardrails, {
    principal,
    exchange,
    protocol: client.protocol,
    body: { model: read.model, input: read.inputs, ...read.title === undefined ? {} : { title: read.title } },
  });
  const request: EmbedRequest = {
    ...read,
    inputs: guarded.body.input as EmbedInput[],
    ...read.title === undefined ? {} : { title: guarded.body.title as string },
  };
  exchange.embeddings = { inputs: request.inputs.length, dimensions: request.dimensions };
  const routes = resolveRoutes(ctx.deps.table, principal.group, request.model, client.listing);
  requireKind(routes, "embedding", request.model);
  // What limits and spend read of it: the inputs, estimated as any prompt is, and no output.
  const admitted: JsonObject = { model: request.model, input: request.inputs };
  for (const guard of ctx.deps.guards) await guard.check(exchange, admitted, principal);
  const plan = {
    request,
    dimensionsField: client.dimensionsField,
    encoding: client.encoding,
    passes: (shape: string) => shape === client.own,
    answer: (result: EmbedResult) => client.answer(request, result),
  };
  return await relay(ctx.deps, {
    routes,
    client: client.protocol,
    operation: "embed",
    body: admitted,
    size: bytes.byteLength,
    req,
    requestId: ctx.requestId,
    exchange,
    deferFinish: ctx.deferFinish,
  }, embedAttempt(plan));
}

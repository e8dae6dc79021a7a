/**
 * @module POST /v1/messages, /v1/messages/count_tokens, /v1/chat/completions and /v1/responses, and the relay
 * call behind Gemini's model actions: authenticate, the body, the routes, the relay, with what a Responses request
 * adds around them in turn.ts.
 */
import { saneId } from "../core/http.ts";
import type { Principal } from "../core/principal.ts";
import { readJsonBody } from "../core/request_body.ts";
import { isObject, type JsonObject, type Operation, type Protocol } from "../core/types.ts";
import { checkBody } from "../protocols/checks.ts";
import { estimatedCount } from "../providers/mod.ts";
import type { RelayRequest } from "../relay/request.ts";
import { type ModelRoute, requireKind, resolveRoutes } from "../relay/routing.ts";
import { sharesTier } from "../relay/select.ts";
import { clientSession, sessionAffinity } from "../relay/session.ts";
import { compactBody } from "./compact.ts";
import type { RequestContext } from "./context.ts";
import { type AnswerGuard, guardAnswer, guardRequest } from "./guard.ts";
import { plainTurn, responsesTurn, type Turn } from "./turn.ts";

/** What a handler is made for besides its protocol and operation. */
interface GenerateOptions {
  /** POST /v1/responses/compact: a Responses body answered with a compaction. */
  compact?: boolean;
  /** Puts into the body what the client said elsewhere (Gemini names the model and streaming in the path). */
  reshape?: (body: JsonObject) => JsonObject;
  /** Narrows the model's routes to those the request may go to (the deployment holding a file it names). */
  narrow?: (
    ctx: RequestContext,
    principal: Principal,
    body: JsonObject,
    routes: readonly ModelRoute[],
  ) => Promise<readonly ModelRoute[]>;
}

/** A handler for one client protocol and operation: authenticate, check the body, resolve the model, relay. */
export function generate(protocol: Protocol, operation: Operation, options: GenerateOptions = {}) {
  return async function handle(req: Request, ctx: RequestContext): Promise<Response> {
    const principal = await ctx.authenticate();
    const { body, bytes, asSent, guard } = await checkedBody(req, ctx, principal, {
      protocol,
      operation,
      ...options,
    });
    const listing = protocol === "gemini" ? "GET /v1beta/models" : "GET /v1/models";
    const resolved = resolveRoutes(ctx.deps.table, principal.group, body.model as string, listing);
    const routes = options.narrow ? await options.narrow(ctx, principal, body, resolved) : resolved;
    requireKind(routes, "chat", body.model as string);
    const turn = protocol === "openai-responses"
      ? await responsesTurn(ctx, { principal, body, size: bytes.byteLength, routes, compact: options.compact === true })
      : plainTurn(ctx, body, bytes.byteLength, operation);
    for (const guard of ctx.deps.guards) await guard.check(ctx.exchange, turn.body, principal);
    // Chat upstreams cannot count tokens: the answer is an estimate, flagged as one.
    if (operation === "count_tokens" && !routes.some(counts)) return estimatedCount(body);
    const usable = operation === "count_tokens" ? routes.filter(counts) : routes;
    const call: RelayRequest = {
      routes: usable,
      client: protocol,
      operation: turn.operation,
      body: turn.sent,
      // The bytes serve only an upstream of the client's own protocol, and only for the body as the client sent it;
      // otherwise they are let go at once.
      bytes: asSent && turn.body === body && usable.some((route) => route.protocol === protocol) ? bytes : undefined,
      size: turn.size,
      req,
      requestId: ctx.requestId,
      exchange: ctx.exchange,
      deferFinish: ctx.deferFinish,
      responseId: turn.responseId,
      watch: turn.watch,
      affinity: await affinity(req, ctx, { protocol, operation, principal, body, bytes, usable, turn }),
    };
    return await guardAnswer(await turn.relay(call), guard, { protocol, requestId: ctx.requestId });
  };
}

/** Whether a route's upstream counts tokens itself. */
function counts(route: ModelRoute): boolean {
  return route.protocol === "anthropic" || route.protocol === "gemini";
}

/**
 * The request's body read within its limits and checked, with the exchange told its model, whether it streams and
 * its session; `asSent` is true when the body is the client's own (nothing put into it from elsewhere).
 */
async function checkedBody(
  req: Request,
  ctx: RequestContext,
  principal: Principal,
  { protocol, operation, compact, reshape }: GenerateOptions & { protocol: Protocol; operation: Operation },
): Promise<{ body: JsonObject; bytes: Uint8Array<ArrayBuffer>; asSent: boolean; guard: AnswerGuard | undefined }> {
  const { config, watchdog } = ctx.deps;
  const { value: sent, bytes } = await readJsonBody(req, {
    maxBytes: config.max_body_bytes,
    idleMs: config.body_idle_timeout_ms,
    hold: ctx.holdBody(),
    watchdog,
  });
  const reshaped = reshape ? reshape(sent) : sent;
  const { exchange } = ctx;
  // Only a model the group enables is recorded: anything else is client input of any size and content. It is
  // known before the body's check, so a body refused by it is recorded under its model.
  const named = isObject(reshaped) ? reshaped.model : undefined;
  if (typeof named === "string" && principal.group.models.includes(named)) exchange.model = named;
  const checked = checkBody(protocol, operation, compact ? compactBody(reshaped) : reshaped);
  // Before anything reads it (the upstream, stored turns, a compaction), the body passes the group's guardrails.
  const { body, answer: guard } = await guardRequest(ctx.deps.guardrails, {
    principal,
    exchange,
    protocol,
    body: checked,
  });
  const value = body === checked ? reshaped : body;
  exchange.stream = body.stream === true;
  exchange.session_id = sessionId(req.headers);
  return { body, bytes, asSent: value === sent, guard };
}

/**
 * The request's session, for prompt-cache affinity: only a model with a choice of deployments needs to know it. The
 * body as the client sent it still names the response it continues, and only a kept answer can be continued later.
 */
async function affinity(
  req: Request,
  ctx: RequestContext,
  request: {
    protocol: Protocol;
    operation: Operation;
    principal: Principal;
    body: JsonObject;
    bytes: Uint8Array;
    usable: readonly ModelRoute[];
    turn: Turn;
  },
): Promise<RelayRequest["affinity"]> {
  const settings = ctx.deps.config.routing.affinity;
  const { protocol, body, turn } = request;
  if (request.operation !== "generate" || !settings.enabled) return undefined;
  if (!sharesTier(request.usable.filter((route) => route.transport))) return undefined;
  return await sessionAffinity({
    protocol,
    body,
    headers: req.headers,
    size: request.bytes.byteLength,
    responseId: turn.watch ? turn.responseId : undefined,
    token: request.principal.token.id,
    model: body.model as string,
    ttlMs: settings.ttl_ms,
  });
}

/** Claude Code's or Codex's session id, kept only when it looks like an id (it ends up in usage records). */
function sessionId(headers: Headers): string | undefined {
  return saneId(clientSession(headers) ?? null);
}

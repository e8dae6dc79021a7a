/**
 * @module POST /v1/messages, /v1/messages/count_tokens, /v1/chat/completions and /v1/responses, and the relay
 * call behind Gemini's model actions.
 */
import { saneId } from "../core/http.ts";
import type { Principal } from "../core/principal.ts";
import { readJsonBody } from "../core/request_body.ts";
import { isObject, type JsonObject, type Operation, type Protocol } from "../core/types.ts";
import { checkBody } from "../protocols/checks.ts";
import { estimatedCount } from "../providers/mod.ts";
import { relay } from "../relay/relay.ts";
import type { RelayRequest } from "../relay/request.ts";
import { type ModelRoute, requireKind, resolveRoutes } from "../relay/routing.ts";
import { sharesTier } from "../relay/select.ts";
import { clientSession, sessionAffinity } from "../relay/session.ts";
import { compactBody, type CompactionPlan, relayCompacting } from "./compact.ts";
import type { RequestContext } from "./context.ts";
import { guardAnswer, guardRequest } from "./guard.ts";
import { prepareResponses } from "./responses.ts";

/**
 * A handler for one client protocol and operation: authenticate, check the body, resolve the model, relay. With
 * `compact`, it is POST /v1/responses/compact: a Responses body answered with a compaction. `reshape` puts into the
 * body what the client said elsewhere (Gemini names the model and streaming in the path).
 */
export function generate(
  protocol: Protocol,
  operation: Operation,
  options: {
    compact?: boolean;
    reshape?: (body: JsonObject) => JsonObject;
    /** Narrows the model's routes to those the request may go to (the deployment holding a file it names). */
    narrow?: (
      ctx: RequestContext,
      principal: Principal,
      body: JsonObject,
      routes: readonly ModelRoute[],
    ) => Promise<readonly ModelRoute[]>;
  } = {},
) {
  return async function handle(req: Request, ctx: RequestContext): Promise<Response> {
    const principal = await ctx.authenticate();
    const { config } = ctx.deps;
    const { value: sent, bytes } = await readJsonBody(req, {
      maxBytes: config.max_body_bytes,
      idleMs: config.body_idle_timeout_ms,
      hold: ctx.holdBody(),
      watchdog: ctx.deps.watchdog,
    });
    const reshaped = options.reshape ? options.reshape(sent) : sent;
    const { exchange } = ctx;
    // Only a model the group enables is recorded: anything else is client input of any size and content. It is
    // known before the body's check, so a body refused by it is recorded under its model.
    const named = isObject(reshaped) ? reshaped.model : undefined;
    if (typeof named === "string" && principal.group.models.includes(named)) exchange.model = named;
    const checked = checkBody(protocol, operation, options.compact ? compactBody(reshaped) : reshaped);
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
    const listing = protocol === "gemini" ? "GET /v1beta/models" : "GET /v1/models";
    const resolved = resolveRoutes(ctx.deps.table, principal.group, body.model as string, listing);
    const routes = options.narrow ? await options.narrow(ctx, principal, body, resolved) : resolved;
    requireKind(routes, "chat", body.model as string);
    // A model served only by Responses upstreams compacts there, with the provider's own items (see compact.ts).
    const native = protocol === "openai-responses" && routes.every((route) => route.protocol === protocol);
    // A Responses request is made whole first, so limits (and the upstream) see everything it stands for.
    const { body: whole, size, watch, plan } = protocol === "openai-responses"
      ? await prepareResponses(ctx, { principal, body, size: bytes.byteLength, native })
      : { body, size: bytes.byteLength, watch: undefined, plan: undefined };
    const compaction: CompactionPlan | undefined = options.compact && !native ? { kind: "compact" } : plan;
    for (const observer of ctx.deps.observers) await observer.admit?.(exchange, whole, principal);
    // Chat upstreams cannot count tokens: the answer is an estimate, flagged as one.
    const counts = (route: { protocol: string }) => route.protocol === "anthropic" || route.protocol === "gemini";
    if (operation === "count_tokens" && !routes.some(counts)) return estimatedCount(body);
    const usable = operation === "count_tokens" ? routes.filter(counts) : routes;
    const responseId = protocol === "openai-responses" ? newResponseId() : undefined;
    // Only a model with a choice of deployments needs to know the request's session; the body as the client sent it
    // still names the response it continues, and only a kept answer can be continued later.
    const settings = ctx.deps.config.routing.affinity;
    const affinity = operation === "generate" && settings.enabled && sharesTier(usable.filter((r) => r.transport))
      ? await sessionAffinity({
        protocol,
        body,
        headers: req.headers,
        size: bytes.byteLength,
        responseId: watch ? responseId : undefined,
        token: principal.token.id,
        model: body.model as string,
        ttlMs: settings.ttl_ms,
      })
      : undefined;
    const call: RelayRequest = {
      routes: usable,
      client: protocol,
      operation: options.compact && native ? "compact" : operation,
      body: options.compact && native ? nativeCompactBody(whole) : whole,
      // The bytes serve only an upstream of the client's own protocol, and only for the body as the client sent it;
      // otherwise they are let go at once.
      bytes: whole === body && value === sent && usable.some((route) => route.protocol === protocol)
        ? bytes
        : undefined,
      // How large the body is: the client's, with what a Responses body brought back from stored turns.
      size,
      req,
      requestId: ctx.requestId,
      exchange,
      deferFinish: ctx.deferFinish,
      responseId,
      watch,
      affinity,
    };
    const res = compaction
      ? await relayCompacting(ctx, call, { plan: compaction, principal })
      : await relay(ctx.deps, call);
    return await guardAnswer(res, guard, { protocol, requestId: ctx.requestId });
  };
}

/** A compact request for the provider's own endpoint: none of the create's transport fields it does not take. */
function nativeCompactBody(body: JsonObject): JsonObject {
  const { stream: _stream, store: _store, ...rest } = body;
  return rest;
}

/** A fresh Responses id: stored responses are found by it, so it never repeats. */
function newResponseId(): string {
  return `resp_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** Claude Code's or Codex's session id, kept only when it looks like an id (it ends up in usage records). */
function sessionId(headers: Headers): string | undefined {
  return saneId(clientSession(headers) ?? null);
}

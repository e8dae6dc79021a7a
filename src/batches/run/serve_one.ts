/**
 * @module One request of a gateway-run batch served in-process by the same handler as the endpoint it names (the
 * body's checks, the group's models, the limits and budget, translation, failover and health), as its
 * token would be served sending it alone: its exchange is recorded by the same observers, usage and spend included.
 */
import { GatewayError, toGatewayError } from "../../core/errors.ts";
import type { Exchange, Guard } from "../../core/exchange.ts";
import type { Principal } from "../../core/principal.ts";
import type { JsonObject, ServedProtocol } from "../../core/types.ts";
import { errorResponse } from "../../protocols/client_errors.ts";
import type { Deps, Endpoint, RequestContext } from "../../handlers/context.ts";
import { openAiEmbeddings } from "../../handlers/embeddings.ts";
import { generate } from "../../handlers/generate.ts";
import type { RunEndpoint } from "./records.ts";

/** How each endpoint is served: the handler its route has, and the protocol its answers and errors are in. */
const SERVED: Record<RunEndpoint, { protocol: ServedProtocol; handle: Endpoint["handle"] }> = {
  "/v1/messages": { protocol: "anthropic", handle: generate("anthropic", "generate") },
  "/v1/chat/completions": { protocol: "openai-chat", handle: generate("openai-chat", "generate") },
  "/v1/responses": { protocol: "openai-responses", handle: generate("openai-responses", "generate") },
  // OpenAI's error shape, as the route's.
  "/v1/embeddings": { protocol: "openai-chat", handle: openAiEmbeddings },
};

/** The route a batch's requests are recorded under, by the batch's protocol: usage tells them from direct calls. */
export const BATCH_ROUTES = { anthropic: "/v1/messages/batches", openai: "/v1/batches" } as const;

/**
 * How one request went: answered (by the model or with an error in the endpoint's protocol), or held back by its
 * token's or group's limits or budget, to be run again once they have room.
 */
export type Served =
  | { kind: "answered"; status: number; body: JsonObject; requestId: string }
  | { kind: "held"; retryAfterMs: number };

/** What serving one request needs. */
export interface ServeOne {
  deps: Deps;
  /** The batch's token as it is now; throws the 401 or 403 it would get sending the request alone. */
  principal(): Promise<Principal>;
  endpoint: RunEndpoint;
  route: string;
  body: JsonObject;
  requestId: string;
  /** Aborted when the request must stop (its claim was lost, or the gateway stops). */
  signal: AbortSignal;
}

/** Serves one request of a batch as its endpoint would, the whole answer read. */
export async function serveOne(one: ServeOne): Promise<Served> {
  const { deps } = one;
  const { protocol, handle } = SERVED[one.endpoint];
  const exchange: Exchange = {
    request_id: one.requestId,
    started_at: deps.now().getTime(),
    method: "POST",
    route: one.route,
    protocol,
    stream: false,
    attempts: [],
    status: 0,
  };
  // A refusal by a guard (limits, budget) holds the request back rather than ending it.
  let refused: GatewayError | undefined;
  const guards: Guard[] = deps.guards.map((guard) => ({
    async check(exchange, body, principal) {
      try {
        await guard.check(exchange, body, principal);
      } catch (err) {
        if (err instanceof GatewayError && err.kind === "rate_limit") refused = err;
        throw err;
      }
    },
  }));
  const body = deps.bodyBudget.hold();
  const ctx: RequestContext = {
    // The observers are told of the exchange here, once, not by the endpoint it goes through.
    deps: { ...deps, guards, observers: [] },
    requestId: one.requestId,
    params: {},
    peer: { address: "unknown", authority: "batch", hostname: "batch", https: false },
    exchange,
    async authenticate() {
      const principal = await one.principal();
      ctx.principal = principal;
      exchange.token_id = principal.token.id;
      exchange.owner = principal.token.owner;
      exchange.group = principal.group.name;
      return principal;
    },
    // The whole answer is read below before the exchange ends, stream or not.
    deferFinish: () => () => {},
    holdBody: () => body,
    dispatch: () => Promise.reject(new GatewayError("invalid_request", "Not available in a batch")),
  };
  const { stream: _stream, stream_options: _options, ...sent } = one.body;
  const req = new Request(`http://batch${one.endpoint}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(sent),
    signal: one.signal,
  });
  for (const observer of deps.observers) observer.start?.(exchange);
  let response: Response;
  try {
    response = await handle(req, ctx);
  } catch (err) {
    const error = toGatewayError(err);
    if (error.kind === "internal") {
      deps.log({ request_id: one.requestId, event: "internal_error", error: String((err as Error)?.stack ?? err) });
    }
    exchange.error = error.kind;
    response = errorResponse(error, protocol, one.requestId);
  }
  let answer: JsonObject;
  try {
    answer = JSON.parse(await response.text());
  } catch (err) {
    exchange.error ??= "upstream";
    answer = JSON.parse(await errorResponse(toGatewayError(err), protocol, one.requestId).text());
  }
  exchange.status = response.status;
  exchange.duration_ms = deps.now().getTime() - exchange.started_at;
  exchange.ttfb_ms ??= exchange.duration_ms;
  body.release();
  for (const observer of deps.observers) observer.finish?.(exchange);
  if (refused) {
    // Refused before any upstream call: nothing was used, and the request runs once its limits have room.
    const seconds = Number(refused.headers.get("retry-after") ?? "1");
    return { kind: "held", retryAfterMs: Math.max(1, Number.isFinite(seconds) ? seconds : 1) * 1000 };
  }
  return { kind: "answered", status: response.status, body: answer, requestId: one.requestId };
}

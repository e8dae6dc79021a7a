/**
 * @module One client request on /mcp, once its session is known: ping and the merged listings answered by the gateway,
 * a call routed to its server (a tool call first counted against `tool_calls_per_minute`), its answer relayed with the
 * notifications that came with it, and what happened left on the exchange for the log, usage, metrics and traces.
 */
import { GatewayError, toGatewayError } from "../core/errors.ts";
import { jsonRpcErrorBody } from "../protocols/mcp.ts";
import type { McpFacts } from "../core/exchange.ts";
import type { Principal } from "../core/principal.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import {
  CODES,
  errorOf,
  type Outcome,
  resultOf,
  RpcError,
  type RpcId,
  type RpcRequest,
  type RpcResponse,
} from "../mcp/jsonrpc.ts";
import type { CallOptions } from "../mcp/hub.ts";
import { listAnswer } from "../mcp/listings.ts";
import { type CallPlan, planCall } from "../mcp/methods.ts";
import { reply, rpcReply } from "../mcp/reply.ts";
import type { ClientSession } from "../mcp/sessions.ts";
import type { RequestContext } from "./context.ts";
import { guardToolCall, isGuardRefusal } from "./guard_tools.ts";

/** A request with who sent it and on which session. */
export interface McpCall {
  principal: Principal;
  session: ClientSession;
  request: RpcRequest;
}

/** How a response from a server ended, for the record. */
function outcomeOf(response: RpcResponse): Outcome {
  if (response.error) return "upstream_error";
  return isObject(response.result) && response.result.isError === true ? "tool_error" : "ok";
}

/** A JSON reply the gateway makes itself, its size and how it ended left for the record. */
export function answered(ctx: RequestContext, status: number, message: RpcResponse, headers?: HeadersInit): Response {
  const facts = ctx.exchange.mcp!;
  const response = rpcReply(status, message, headers, ctx.deps.mcp.redact);
  facts.outcome ??= message.error ? "invalid" : "ok";
  facts.response_bytes = Number(response.headers.get("content-length"));
  return response;
}

/** Counts the request against its limits (see docs/mcp.md, "Limits"); the reply refusing it when over one. */
export async function admitted(ctx: RequestContext, principal: Principal, id: RpcId | null) {
  try {
    for (const guard of ctx.deps.guards) await guard.check(ctx.exchange, {}, principal);
    return undefined;
  } catch (err) {
    const error = toGatewayError(err);
    if (error.kind !== "rate_limit" && error.kind !== "unavailable") throw err;
    // A limit (429) or a limit that cannot be checked (503): the status says so, the body is the request's error.
    ctx.exchange.mcp!.outcome = error.kind === "rate_limit" ? "rate_limited" : "unavailable";
    ctx.exchange.error = error.kind;
    return answered(ctx, error.status, jsonRpcErrorBody(error, id) as unknown as RpcResponse, error.headers);
  }
}

/** The answer to one request on a known session. */
export async function answerRequest(req: Request, ctx: RequestContext, call: McpCall): Promise<Response> {
  const { request, principal } = call;
  const facts = ctx.exchange.mcp!;
  const hub = ctx.deps.mcp;
  const grant = principal.group.mcp;
  try {
    if (request.method === "ping") return answered(ctx, 200, resultOf(request.id, {}));
    const listed = await listAnswer(hub, grant, request, ctx.deps.config.mcp.list_page_bytes);
    if (listed) return answered(ctx, 200, resultOf(request.id, listed));
    const plan = await planCall(hub, grant, request);
    if (!plan) {
      throw new RpcError(CODES.methodNotFound, `Method not found: ${request.method}`);
    }
    facts.server = plan.server;
    if (request.method !== "resources/read") facts.name = plan.name;
    if (request.method !== "tools/call") return await relay(req, ctx, call, plan);
    const refused = await admitted(ctx, principal, request.id);
    if (refused) return refused;
    let guarded: Awaited<ReturnType<typeof guardToolCall>>;
    try {
      guarded = await guardToolCall(ctx.deps.guardrails, { principal, exchange: ctx.exchange, route: plan });
    } catch (err) {
      if (!isGuardRefusal(err)) throw err;
      facts.outcome = "refused";
      return answered(ctx, 200, jsonRpcErrorBody(err, request.id) as unknown as RpcResponse);
    }
    return await relay(req, ctx, call, guarded.route, guarded.result);
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    facts.outcome = err.outcome;
    return answered(ctx, 200, errorOf(request.id, err));
  }
}

/** Sends the call to its server and replies with what comes back (JSON, or SSE when notifications came first). */
function relay(
  req: Request,
  ctx: RequestContext,
  call: McpCall,
  plan: CallPlan,
  guard?: (result: JsonObject) => JsonObject,
): Promise<Response> {
  const facts: McpFacts = ctx.exchange.mcp!;
  const hub = ctx.deps.mcp;
  const stop = new AbortController();
  const leave = () => stop.abort(req.signal.reason);
  req.signal.addEventListener("abort", leave, { once: true });
  const forget = hub.track(call.session, call.request.id, stop);
  let endExchange: (() => void) | undefined;
  const trace = ctx.exchange.trace;
  // A planned call's server is one of the hub's (the plan came from its catalog), so it has a transport.
  const transport = hub.transport(plan.server) ?? "http";
  const send = (onNotice: CallOptions["onNotice"]) => {
    const sent = () => hub.call(plan.server, call.session, plan.request, { signal: stop.signal, onNotice });
    if (!trace?.mcp) return sent();
    const span = {
      method: call.request.method,
      server: plan.server,
      target: plan.name,
      requestId: call.request.id,
      session: call.session.id,
      transport,
      params: plan.request.params ?? {},
      redact: hub.redact,
    } as const;
    return trace.mcp(span, sent);
  };
  const run = (onNotice: CallOptions["onNotice"]) =>
    send(onNotice).then(
      (response) => {
        facts.outcome = outcomeOf(response);
        if (!response.result) return response;
        try {
          const result = plan.finish(response.result);
          return resultOf(call.request.id, guard ? guard(result) : result);
        } catch (err) {
          if (!isGuardRefusal(err)) throw err;
          facts.outcome = "refused";
          return jsonRpcErrorBody(err, call.request.id) as unknown as RpcResponse;
        }
      },
      (err) => {
        if (err instanceof RpcError) {
          facts.outcome = err.outcome;
          return errorOf(call.request.id, err);
        }
        facts.outcome = "client_closed";
        const reason = err instanceof GatewayError ? err.message : "The call was cancelled";
        return errorOf(call.request.id, new RpcError(CODES.server, reason));
      },
    ).finally(() => {
      forget();
      req.signal.removeEventListener("abort", leave);
    });
  return reply(run, {
    headers: new Headers(),
    redact: hub.redact,
    stop: () => stop.abort(),
    onStream: () => {
      ctx.exchange.stream = true;
      endExchange = ctx.deferFinish();
    },
    ended: ({ bytes }) => {
      facts.response_bytes = bytes;
      endExchange?.();
    },
  });
}

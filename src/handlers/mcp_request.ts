/**
 * @module One client request on /mcp, once its session is known: ping and the merged listings answered by the gateway,
 * a call routed to its server (a tool call first counted against `tool_calls_per_minute`), its answer relayed with the
 * notifications that came with it, and what happened left on the exchange for the log, usage, metrics and traces.
 */
import { GatewayError, toGatewayError } from "../core/errors.ts";
import { jsonRpcErrorBody } from "../protocols/mcp.ts";
import type { McpFacts } from "../core/exchange.ts";
import type { Principal } from "../core/principal.ts";
import { isObject } from "../core/types.ts";
import { CODES, errorOf, type Outcome, resultOf, RpcError, type RpcRequest, type RpcResponse } from "../mcp/jsonrpc.ts";
import type { CallOptions } from "../mcp/hub.ts";
import { listAnswer, type Route, routeOf } from "../mcp/methods.ts";
import { reply, rpcReply } from "../mcp/reply.ts";
import type { ClientSession } from "../mcp/sessions.ts";
import type { RequestContext } from "./context.ts";

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

/** The answer to one request on a known session. */
export async function answerRequest(req: Request, ctx: RequestContext, call: McpCall): Promise<Response> {
  const { request, principal } = call;
  const facts = ctx.exchange.mcp!;
  const hub = ctx.deps.mcp;
  const grant = principal.group.mcp;
  const maxLength = ctx.deps.config.mcp.name_max_length;
  try {
    if (request.method === "ping") return rpcReply(200, resultOf(request.id, {}));
    const listed = await listAnswer(hub, grant, request.method, maxLength);
    if (listed) return rpcReply(200, resultOf(request.id, listed), {}, ctx.deps.mcp.redact);
    const route = await routeOf(hub, grant, request, maxLength);
    if (!route) {
      throw new RpcError(CODES.methodNotFound, `Method not found: ${request.method}`);
    }
    facts.server = route.server;
    if (request.method !== "resources/read") facts.name = route.name;
    if (request.method === "tools/call") {
      for (const observer of ctx.deps.observers) await observer.admit?.(ctx.exchange, {}, principal);
    }
    return await relay(req, ctx, call, route);
  } catch (err) {
    if (err instanceof RpcError) {
      facts.outcome = err.outcome;
      return rpcReply(200, errorOf(request.id, err), {}, ctx.deps.mcp.redact);
    }
    const error = toGatewayError(err);
    if (error.kind === "internal" || error.kind === "client_closed") throw err;
    // A limit (429) or a limit that cannot be checked (503): the status says so, the body is the request's error.
    facts.outcome = error.kind === "rate_limit" ? "rate_limited" : "unavailable";
    ctx.exchange.error = error.kind;
    return rpcReply(error.status, jsonRpcErrorBody(error, request.id) as unknown as RpcResponse, error.headers);
  }
}

/** Sends the call to its server and replies with what comes back (JSON, or SSE when notifications came first). */
function relay(req: Request, ctx: RequestContext, call: McpCall, route: Route): Promise<Response> {
  const facts: McpFacts = ctx.exchange.mcp!;
  const hub = ctx.deps.mcp;
  const stop = new AbortController();
  const leave = () => stop.abort(req.signal.reason);
  req.signal.addEventListener("abort", leave, { once: true });
  const forget = hub.track(call.session, call.request.id, stop);
  let endExchange: (() => void) | undefined;
  const trace = ctx.exchange.trace;
  const transport = hub.servers.find((server) => server.name === route.server)?.url ? "http" : "stdio";
  const send = (onNotice: CallOptions["onNotice"]) => {
    const sent = () => hub.call(route.server, call.session, route.request, { signal: stop.signal, onNotice });
    if (!trace?.mcp) return sent();
    const span = {
      method: call.request.method,
      server: route.server,
      target: route.name,
      requestId: call.request.id,
      session: call.session.id,
      transport,
      params: route.request.params ?? {},
    } as const;
    return trace.mcp(span, sent);
  };
  const run = (onNotice: CallOptions["onNotice"]) =>
    send(onNotice).then(
      (response) => {
        facts.outcome = outcomeOf(response);
        return response.result ? resultOf(call.request.id, route.finish(response.result)) : response;
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

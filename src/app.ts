/**
 * @module The HTTP app: an endpoint table, one matcher, and the single place where errors become responses
 * in the protocol of the route that failed. `main` binds it to a port; tests call it directly.
 */
import { authenticateRequest } from "./access/auth.ts";
import { AUTH_ENDPOINTS } from "./admin/auth_routes.ts";
import { ADMIN_ENDPOINTS } from "./admin/routes.ts";
import { BATCH_ENDPOINTS } from "./batches/endpoints.ts";
import { holdingRoutes } from "./batches/file_routing.ts";
import { CONSOLE_ENDPOINT } from "./console/endpoint.ts";
import { clientClosed, GatewayError, toGatewayError } from "./core/errors.ts";
import { errorResponse } from "./protocols/client_errors.ts";
import { rangesMatcher } from "./core/addresses.ts";
import type { Exchange } from "./core/exchange.ts";
import { requestIdFrom } from "./core/http.ts";
import { type Peer, peerOf, publicHostRule, remoteAddress } from "./core/peer.ts";
import type { Protocol } from "./core/types.ts";
import type { Deps, Endpoint, RequestContext } from "./handlers/context.ts";
import { GEMINI_ENDPOINTS } from "./handlers/gemini.ts";
import { exchangeLifecycle } from "./handlers/lifecycle.ts";
import { MCP_ENDPOINT } from "./handlers/mcp.ts";
import { OAUTH_ENDPOINTS } from "./oauth/endpoint.ts";
import { openAiEmbeddings } from "./handlers/embeddings.ts";
import { generate } from "./handlers/generate.ts";
import { getModel, listingProtocol, listModelsHandler } from "./handlers/models.ts";
import { deleteResponse, getResponse, listInputItems } from "./handlers/responses.ts";
import { responsesSocket } from "./handlers/socket/endpoint.ts";

const anthropicErrors = () => "anthropic" as const;
const chatErrors = () => "openai-chat" as const;
// OpenAI's error shape, under the Responses protocol's own name: it is what the request log records.
const responsesErrors = () => "openai-responses" as const;

/** The gateway's endpoints. Routing looks at the path only, so `?beta=true` changes nothing. */
export const ENDPOINTS: readonly Endpoint[] = [
  { method: "GET", path: "/v1/models", errors: listingProtocol, handle: listModelsHandler },
  { method: "GET", path: "/v1/models/:id", errors: listingProtocol, handle: getModel },
  {
    method: "POST",
    path: "/v1/messages",
    errors: anthropicErrors,
    handle: generate("anthropic", "generate", { narrow: holdingRoutes }),
  },
  {
    method: "POST",
    path: "/v1/messages/count_tokens",
    errors: anthropicErrors,
    handle: generate("anthropic", "count_tokens"),
  },
  { method: "POST", path: "/v1/chat/completions", errors: chatErrors, handle: generate("openai-chat", "generate") },
  { method: "POST", path: "/v1/embeddings", errors: chatErrors, handle: openAiEmbeddings },
  {
    method: "POST",
    path: "/v1/responses",
    errors: responsesErrors,
    handle: generate("openai-responses", "generate", { narrow: holdingRoutes }),
  },
  // The Responses API's WebSocket mode: each response.create on the socket goes back through this table as a POST.
  { method: "GET", path: "/v1/responses", errors: responsesErrors, handle: responsesSocket },
  {
    method: "POST",
    path: "/v1/responses/compact",
    errors: responsesErrors,
    handle: generate("openai-responses", "generate", { compact: true }),
  },
  { method: "GET", path: "/v1/responses/:id", errors: responsesErrors, handle: getResponse },
  { method: "DELETE", path: "/v1/responses/:id", errors: responsesErrors, handle: deleteResponse },
  { method: "GET", path: "/v1/responses/:id/input_items", errors: responsesErrors, handle: listInputItems },
  ...BATCH_ENDPOINTS,
  ...GEMINI_ENDPOINTS,
  MCP_ENDPOINT,
  ...OAUTH_ENDPOINTS,
  ...ADMIN_ENDPOINTS,
  ...AUTH_ENDPOINTS,
  CONSOLE_ENDPOINT,
];

/** Finds the endpoint for a path; `params` receives the `:id` segment of its pattern. */
export function matchEndpoint(
  method: string,
  pathname: string,
): { endpoint?: Endpoint; params: Record<string, string>; pathKnown: boolean } {
  // The Anthropic SDK and Claude Code append /v1 themselves; a base URL that already ends in /v1 doubles it.
  const path = pathname.replace(/^\/v1\/v1(?=\/|$)/, "/v1").replace(/\/+$/, "");
  let pathKnown = false;
  for (const endpoint of ENDPOINTS) {
    const params: Record<string, string> = {};
    const slot = endpoint.path.indexOf("/:id");
    if (endpoint.path.endsWith("/*")) {
      const prefix = endpoint.path.slice(0, -2);
      if (path !== prefix && !path.startsWith(`${prefix}/`)) continue;
      params.rest = path.slice(prefix.length);
    } else if (slot !== -1) {
      const prefix = endpoint.path.slice(0, slot + 1);
      const suffix = endpoint.path.slice(slot + 4);
      const end = path.length - suffix.length;
      if (end <= prefix.length || !path.startsWith(prefix) || !path.endsWith(suffix)) continue;
      const segment = path.slice(prefix.length, end);
      const id = segment.includes("/") ? undefined : decodeId(segment);
      if (id === undefined) continue;
      params.id = id;
    } else if (endpoint.path !== path) continue;
    pathKnown = true;
    if (endpoint.method === method || endpoint.method === "*") return { endpoint, params, pathKnown };
  }
  return { params: {}, pathKnown };
}

/** A path segment decoded, or undefined when its %-escapes are malformed (then no endpoint matches). */
function decodeId(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The error shape for a path no endpoint serves: Anthropic's under /v1/messages, OpenAI's elsewhere. */
function unknownPathProtocol(pathname: string): Protocol {
  return /^(\/v1)?\/v1\/messages(\/|$)/.test(pathname) ? "anthropic" : "openai-chat";
}

/** The refusal of an operator's route asked for under a host name the gateway does not answer for. */
function unknownHost(hostname: string): GatewayError {
  return new GatewayError(
    "permission",
    `This gateway's console and admin API do not answer for host "${hostname}": list it in public_hosts`,
    { status: 421, code: "misdirected_request" },
  );
}

/** Builds the request handler; `info` is what `Deno.serve` gives it (the connection's address). */
export function createApp(deps: Deps): (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> {
  const trusted = rangesMatcher(deps.config.trusted_proxies);
  const publicHost = publicHostRule(deps.config.public_hosts, deps.config.listen.host);
  return (req: Request, info?: Deno.ServeHandlerInfo) => {
    // Parsed once: the peer's host and the route both read it.
    const url = new URL(req.url);
    return handle(req, peerOf(req, remoteAddress(info), trusted, url), undefined, url);
  };

  /**
   * Serves one request from `peer`. A request made from a socket's message is served exactly as an HTTP one and says
   * so; its peer is the socket's, found at the handshake (the made request has no connection of its own).
   */
  async function handle(
    req: Request,
    peer: Peer,
    socket?: { serve?: Endpoint["handle"] },
    url = new URL(req.url),
  ): Promise<Response> {
    const requestId = requestIdFrom(req.headers);
    // Probes and scrapes stay out of the exchange record, so they neither log a line nor count as traffic.
    const ops = await deps.ops?.(req, url.pathname, peer.address);
    if (ops) {
      ops.headers.set("x-request-id", requestId);
      if (deps.stopping?.aborted) ops.headers.set("connection", "close");
      return ops;
    }
    const matched = matchEndpoint(req.method, url.pathname);
    const { params, pathKnown } = matched;
    // A socket's own request (a warm-up) is served its own way, as an exchange of the endpoint its path names.
    const endpoint = matched.endpoint && socket?.serve
      ? { ...matched.endpoint, handle: socket.serve }
      : matched.endpoint;
    const exchange: Exchange = {
      request_id: requestId,
      started_at: deps.now().getTime(),
      method: req.method,
      route: endpoint?.path ?? (pathKnown ? "method_not_allowed" : "unknown"),
      protocol: endpoint ? endpoint.errors(req) : unknownPathProtocol(url.pathname),
      stream: false,
      attempts: [],
      status: 0,
    };
    if (socket) exchange.transport = "websocket";
    const lifecycle = exchangeLifecycle(exchange, deps);
    const ctx: RequestContext = {
      deps,
      requestId,
      params,
      peer,
      exchange,
      async authenticate() {
        ctx.principal = await authenticateRequest(req, exchange.protocol, {
          guard: deps.operator.guard,
          credentials: deps.operator.credentials,
          address: peer.address,
          now: deps.now(),
          urlTraced: deps.urlTraced,
        });
        exchange.token_id = ctx.principal.token.id;
        exchange.owner = ctx.principal.token.owner;
        exchange.group = ctx.principal.group.name;
        return ctx.principal;
      },
      deferFinish: lifecycle.deferFinish,
      holdBody: lifecycle.holdBody,
      dispatch: (made, serve) => handle(made, peer, { serve }),
    };
    // The protocol errors are spoken in; known once the handler has run (a model listing follows the caller's group).
    const errorProtocol = () => endpoint ? endpoint.errors(req, ctx.principal) : unknownPathProtocol(url.pathname);
    let response: Response;
    try {
      if (!endpoint) {
        throw pathKnown
          ? new GatewayError("invalid_request", `Method ${req.method} is not allowed on ${url.pathname}`, {
            status: 405,
          })
          : new GatewayError("not_found", `Unknown path: ${req.method} ${url.pathname}`, { code: "unknown_url" });
      }
      if (endpoint.operator && !publicHost(peer.hostname)) throw unknownHost(peer.hostname);
      response = await endpoint.handle(req, ctx);
    } catch (err) {
      // Whatever ended a request whose client has gone, it ended as the client's cancellation.
      const error = req.signal.aborted ? clientClosed(err) : toGatewayError(err);
      if (error.kind === "internal") {
        deps.log({ request_id: requestId, event: "internal_error", error: String((err as Error)?.stack ?? err) });
      }
      exchange.error = error.kind;
      lifecycle.failed();
      response = errorResponse(error, errorProtocol(), requestId);
      if (req.body && !req.bodyUsed) await req.body.cancel().catch(() => {});
    }
    exchange.status = response.status;
    response.headers.set("x-request-id", requestId);
    // A client must not send another request on a connection the stopping gateway is about to close.
    if (deps.stopping?.aborted) response.headers.set("connection", "close");
    if (errorProtocol() === "anthropic") {
      response.headers.set("request-id", requestId);
    }
    lifecycle.answered();
    return response;
  }
}

/**
 * @module The /mcp endpoint: MCP over Streamable HTTP for the gateway's tokens. It checks the request as the transport
 * defines (Origin, Accept, Content-Type, one JSON-RPC message, the session and its protocol version), opens and ends
 * clients' sessions, and hands each request to ./mcp_request.ts. Errors outside a request are JSON-RPC errors with
 * the HTTP status the transport names; there is no GET stream (405), as the transport allows.
 */
import { GatewayError } from "../core/errors.ts";
import { deeperThan, MAX_JSON_DEPTH, tooDeep } from "../core/json_depth.ts";
import { readBodyBytes } from "../core/request_body.ts";
import type { Principal } from "../core/principal.ts";
import {
  CODES,
  errorOf,
  isNotification,
  isRequest,
  resultOf,
  RpcError,
  type RpcRequest,
  toMessage,
} from "../mcp/jsonrpc.ts";
import { grantedHere } from "../mcp/listings.ts";
import { CLIENT_VERSIONS, initialize } from "../mcp/methods.ts";
import { rpcReply } from "../mcp/reply.ts";
import type { ClientSession } from "../mcp/sessions.ts";
import type { Endpoint, RequestContext } from "./context.ts";
import { authenticateMcp } from "./mcp_auth.ts";
import { admitted, answered, answerRequest } from "./mcp_request.ts";

/** A transport-level refusal: a JSON-RPC error without an id, with its HTTP status. */
function refusal(status: number, code: number, message: string, headers?: HeadersInit): Response {
  return rpcReply(status, errorOf(null, new RpcError(code, message)), headers);
}

/**
 * A browser page of another site must not reach the endpoint through the person's browser (DNS rebinding): a request
 * with an Origin is served only when that origin is the gateway itself or one of its public host names.
 */
function checkOrigin(req: Request, ctx: RequestContext): void {
  const origin = req.headers.get("origin");
  if (origin === null) return;
  let url: URL | undefined;
  try {
    url = new URL(origin);
  } catch {
    // Not an origin at all: refused below.
  }
  const own = url && (url.host === ctx.peer.authority || ctx.deps.config.public_hosts.includes(url.hostname));
  if (!own) throw new GatewayError("permission", "Requests from this Origin are not allowed on /mcp");
}

/** Serves one request to /mcp. */
async function serveMcp(req: Request, ctx: RequestContext): Promise<Response> {
  checkOrigin(req, ctx);
  const principal = await authenticateMcp(req, ctx);
  if (req.method === "DELETE") return await endSession(req, ctx, principal);
  if (req.method !== "POST") {
    if (req.body) await req.body.cancel();
    // No stream for the server's own messages: what a server sends is passed on with the answer to its request.
    return refusal(405, CODES.server, `Method not allowed: ${req.method}; /mcp takes POST and DELETE`, {
      allow: "POST, DELETE",
    });
  }
  return await post(req, ctx, principal);
}

/** The client's session from its header, or the response that refuses the request. */
async function sessionOf(req: Request, ctx: RequestContext, principal: Principal): Promise<ClientSession | Response> {
  const id = req.headers.get("mcp-session-id");
  if (!id) return refusal(400, CODES.server, "Bad Request: Mcp-Session-Id header is required; start with initialize");
  const version = req.headers.get("mcp-protocol-version");
  if (version !== null && !CLIENT_VERSIONS.includes(version)) {
    return refusal(
      400,
      CODES.server,
      `Bad Request: unsupported protocol version ${version} (supported: ${CLIENT_VERSIONS.join(", ")})`,
    );
  }
  const session = await ctx.deps.mcp.sessions.get(id);
  // Another token's session is no session of this caller's: the same answer as for one that does not exist.
  if (!session || session.token_id !== principal.token.id) {
    return refusal(404, CODES.sessionNotFound, "Session not found");
  }
  ctx.exchange.mcp!.session = session.id;
  return session;
}

async function post(req: Request, ctx: RequestContext, principal: Principal): Promise<Response> {
  const { config } = ctx.deps;
  const accept = req.headers.get("accept") ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
    await req.body?.cancel();
    return refusal(406, CODES.server, "Not Acceptable: accept both application/json and text/event-stream");
  }
  const type = (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/json") {
    await req.body?.cancel();
    return refusal(415, CODES.server, "Unsupported Media Type: Content-Type must be application/json");
  }
  ctx.exchange.mcp = { method: "unknown" };
  const bytes = await readBodyBytes(req, {
    maxBytes: config.max_body_bytes,
    idleMs: config.body_idle_timeout_ms,
    hold: ctx.holdBody(),
    watchdog: ctx.deps.watchdog,
  });
  ctx.exchange.mcp.request_bytes = bytes.byteLength;
  const text = new TextDecoder().decode(bytes);
  // As on every JSON route: a message nested past the limit goes to no server and is walked by nothing.
  if (deeperThan(text, MAX_JSON_DEPTH)) return refusal(400, CODES.invalidRequest, tooDeep("Message").message);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refusal(400, CODES.parseError, "Parse error: the body is not valid JSON");
  }
  const message = toMessage(value);
  if (message instanceof RpcError) return rpcReply(400, errorOf(null, message));
  // A response from the client would answer a request of the gateway's, and the gateway makes none.
  if (!("method" in message)) return new Response(null, { status: 202 });
  ctx.exchange.mcp.method = message.method;
  const refused = await admitted(ctx, principal, isRequest(message) ? message.id : null);
  if (refused) return refused;
  if (isRequest(message) && message.method === "initialize") return await open(ctx, principal, message);
  const session = await sessionOf(req, ctx, principal);
  if (session instanceof Response) return session;
  if (isNotification(message)) {
    if (message.method === "notifications/cancelled") ctx.deps.mcp.cancel(session, message);
    return new Response(null, { status: 202 });
  }
  return await answerRequest(req, ctx, { principal, session, request: message });
}

/**
 * `initialize`: a session for a token whose group may use an MCP server (another would cost a session and have nothing
 * to use in it), on the version agreed.
 */
async function open(ctx: RequestContext, principal: Principal, request: RpcRequest): Promise<Response> {
  let agreed: ReturnType<typeof initialize>;
  try {
    agreed = initialize(request);
  } catch (err) {
    return answered(ctx, 200, errorOf(request.id, err as RpcError));
  }
  if (grantedHere(ctx.deps.mcp, principal.group.mcp).length === 0) {
    ctx.exchange.mcp!.outcome = "refused";
    const why =
      `Forbidden: the group "${principal.group.name}" of this token may use no MCP server (it has no mcp grant)`;
    return answered(ctx, 403, errorOf(request.id, new RpcError(CODES.server, why)));
  }
  const session = await ctx.deps.mcp.open(principal.token.id, agreed.version);
  ctx.exchange.mcp!.session = session.id;
  return answered(ctx, 200, resultOf(request.id, agreed.result), { "mcp-session-id": session.id });
}

/** DELETE /mcp: ends the client's session and the sessions it opened with servers. */
async function endSession(req: Request, ctx: RequestContext, principal: Principal): Promise<Response> {
  ctx.exchange.mcp = { method: "session/delete" };
  const refused = await admitted(ctx, principal, null);
  if (refused) return refused;
  const session = await sessionOf(req, ctx, principal);
  if (session instanceof Response) return session;
  const ended = await ctx.deps.mcp.sessions.delete(session.id);
  if (ended) await ctx.deps.mcp.end(ended);
  return new Response(null, { status: 200 });
}

/** The endpoint in the app's table. */
export const MCP_ENDPOINT: Endpoint = { method: "*", path: "/mcp", errors: () => "mcp", handle: serveMcp };

/**
 * @module GET /v1/responses with `Upgrade: websocket`: the Responses API's WebSocket mode. The handshake is
 * authenticated and limited like an HTTP request (a refusal is the HTTP route's status and body, before the
 * upgrade); the socket's messages are then served by the session in session.ts.
 */
import { GatewayError } from "../../core/errors.ts";
import type { RequestContext } from "../context.ts";
import { handshakeOf, runSession } from "./session.ts";

/** Opens a Responses socket for an authenticated caller, or refuses as the HTTP route would. */
export async function responsesSocket(req: Request, ctx: RequestContext): Promise<Response> {
  const settings = ctx.deps.config.responses_socket;
  // Without an upgrade this is a plain GET of the collection, which the API does not have.
  if (!settings.enabled || req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    throw new GatewayError("invalid_request", "Method GET is not allowed on /v1/responses", { status: 405 });
  }
  const principal = await ctx.authenticate();
  if (ctx.deps.stopping?.aborted) {
    throw new GatewayError("unavailable", "The gateway is shutting down; connect again", {
      headers: { "retry-after": "1" },
    });
  }
  const release = ctx.deps.sockets.open(principal.token.id, settings.max_per_token);
  if (!release) {
    throw new GatewayError(
      "rate_limit",
      `This API key already has ${settings.max_per_token} Responses WebSockets open on this gateway ` +
        "(responses_socket.max_per_token); close one or use it for more responses",
      { code: "too_many_websockets", headers: { "retry-after": "1" } },
    );
  }
  const handshake = handshakeOf(req);
  let upgraded: { socket: WebSocket; response: Response };
  try {
    upgraded = Deno.upgradeWebSocket(req);
  } catch {
    release();
    throw new GatewayError("invalid_request", "The WebSocket handshake is incomplete (sec-websocket-key)", {
      param: "sec-websocket-key",
    });
  }
  runSession(upgraded.socket, { ctx, handshake, settings, end: release });
  return upgraded.response;
}

/**
 * @module `POST /oauth/register`: dynamic client registration (RFC 7591) for public clients, open to anyone as the
 * MCP clients need it, so each registration is charged to the address's allowance and recorded in the audit trail.
 */
import { registerClient } from "../access/oauth_clients.ts";
import { readJsonObject } from "../core/request_body.ts";
import type { RequestContext } from "../handlers/context.ts";
import { oauthJson } from "./reply.ts";

/** The largest registration read. */
const MAX_REGISTRATION_BYTES = 16_384;

/** `POST /oauth/register`. */
export async function register(req: Request, ctx: RequestContext): Promise<Response> {
  const { deps, peer } = ctx;
  deps.operator.guard.attempt("oauth_client", peer.address).failed();
  const body = await readJsonObject(req, {
    maxBytes: MAX_REGISTRATION_BYTES,
    idleMs: deps.config.body_idle_timeout_ms,
  });
  let registered;
  try {
    registered = await registerClient(deps.store, body, deps.now());
  } catch (err) {
    deps.oauth.count("register", "refused");
    throw err;
  }
  const { client, answer } = registered;
  deps.oauth.count("register", "ok");
  await deps.oauth.audit({
    who: `client ${client.client_name}`,
    action: "oauth_client.register",
    target: client.client_id,
    after: { client_name: client.client_name, redirect_uris: client.redirect_uris },
    ip: peer.address,
    user_agent: req.headers.get("user-agent") ?? undefined,
  });
  return oauthJson(answer, 201);
}

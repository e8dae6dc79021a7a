/**
 * @module Who a request to /mcp comes from: one of the gateway's tokens as on every route, or an OAuth access token
 * the gateway issued for this /mcp (docs/mcp.md, "Signing in with OAuth"). A 401 carries the challenge that starts a
 * client's sign-in (`resource_metadata`), except when the client sent one of the gateway's keys: it was set up with
 * that key, and is told the key is invalid rather than invited to sign in instead.
 */
import { readCredential } from "../access/auth.ts";
import { checkAccessToken } from "../access/oauth_access.ts";
import { revokeGrant } from "../access/oauth_grants.ts";
import { isAccessToken, mcpResource, oauthBase } from "../access/oauth_rules.ts";
import { GatewayError } from "../core/errors.ts";
import { publicHostRule } from "../core/peer.ts";
import type { Principal } from "../core/principal.ts";
import type { RequestContext } from "./context.ts";

/** Where the protected resource metadata of /mcp is, under the gateway's base URL. */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp";

/** A header value's quoted string: the characters RFC 9110 would need escaped are dropped, not escaped. */
function quoted(text: string): string {
  return `"${text.replace(/[\\"\p{Cc}]/gu, "")}"`;
}

/**
 * The base URL OAuth is served under for this request, or undefined when it is not: off in the config, a host name
 * the gateway does not answer for, or plain http beyond loopback.
 */
function servedBase(ctx: RequestContext): string | undefined {
  const { config } = ctx.deps;
  if (!ctx.deps.oauth.enabled) return undefined;
  if (!publicHostRule(config.public_hosts, config.listen.host)(ctx.peer.hostname)) return undefined;
  return oauthBase(ctx.peer);
}

/** Authenticates a request to /mcp; a 401 carries the challenge described above. */
export async function authenticateMcp(req: Request, ctx: RequestContext): Promise<Principal> {
  const base = servedBase(ctx);
  const credential = readCredential(req.headers);
  try {
    if (base && credential && isAccessToken(credential)) return await oauthPrincipal(req, ctx, credential, base);
    return await ctx.authenticate();
  } catch (err) {
    if (!(err instanceof GatewayError) || err.status !== 401 || !base) throw err;
    const keyed = req.headers.has("x-api-key") || credential?.startsWith("sk-");
    const error = credential ? `error="invalid_token", error_description=${quoted(err.message)}` : "";
    const metadata = `resource_metadata=${quoted(`${base}${RESOURCE_METADATA_PATH}`)}`;
    const params = keyed ? error : [error, metadata].filter(Boolean).join(", ");
    err.headers.set("www-authenticate", `Bearer ${params}`.trim());
    err.headers.set("access-control-expose-headers", "WWW-Authenticate");
    throw err;
  }
}

/** The principal of an OAuth access token, or its 401; a grant whose person no longer stands is revoked. */
async function oauthPrincipal(req: Request, ctx: RequestContext, token: string, base: string): Promise<Principal> {
  const { deps, peer, exchange } = ctx;
  const attempt = deps.operator.guard.attempt("token", peer.address);
  const rules = deps.config.auth.oidc?.roles ?? [];
  const checked = await checkAccessToken(
    { store: deps.store, credentials: deps.operator.credentials, rules, now: deps.now },
    token,
    mcpResource(base),
  );
  const oauth = deps.oauth;
  if (!checked.ok) {
    if (!checked.grant) attempt.failed();
    const revoked = checked.revoke && checked.grant && await revokeGrant(deps.store, checked.grant.id);
    oauth.count("access", revoked ? "revoked" : "refused");
    if (checked.grant) {
      await oauth.audit({
        who: checked.grant.subject.kind === "person" ? checked.grant.subject.email : checked.grant.subject.token_id,
        action: revoked ? "oauth_grant.revoke" : "oauth.refused",
        target: checked.grant.id,
        before: revoked ? { client_name: checked.grant.client_name, client_id: checked.grant.client_id } : null,
        after: { reason: checked.why, client_name: checked.grant.client_name },
        ip: peer.address,
        user_agent: req.headers.get("user-agent") ?? undefined,
      });
    }
    throw new GatewayError("authentication", checked.why);
  }
  oauth.count("access", "ok");
  const { principal } = checked;
  ctx.principal = principal;
  exchange.token_id = principal.token.id;
  exchange.owner = principal.token.owner;
  exchange.group = principal.group.name;
  return principal;
}

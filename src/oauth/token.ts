/**
 * @module `POST /oauth/token` (RFC 6749 as OAuth 2.1 profiles it) and `POST /oauth/revoke` (RFC 7009) for public
 * clients. A code is redeemed once, by the client it was issued to, with the redirect URI it was issued for, the PKCE
 * verifier of its challenge and the same resource, while the person still stands; a code redeemed twice revokes the
 * grant it started. A refresh token rotates; one presented after it was rotated revokes its grant. Every grant,
 * refresh, revocation and refusal of a known code or grant is in the audit trail.
 */
import { NoStanding, standingOf, type SubjectDeps } from "../access/oauth_access.ts";
import { findClient, keepClient } from "../access/oauth_clients.ts";
import {
  type CodeRecord,
  grantOfSecret,
  grantView,
  type IssuedTokens,
  type OAuthGrant,
  redeemCode,
  type Redeemed,
  refreshGrant,
  revokeGrant,
  startGrant,
} from "../access/oauth_grants.ts";
import { sameResource, verifierMatches } from "../access/oauth_rules.ts";
import type { OAuthAuditEntry, OAuthOutcome } from "../access/oauth_server.ts";
import { readForm } from "../console/forms.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { oauthError, oauthJson } from "./reply.ts";

/** The person or token a grant is for, as the audit trail names them. */
function whoOf(grant: OAuthGrant): string {
  return grant.subject.kind === "person" ? grant.subject.email : grant.subject.token_id;
}

/** What every audit entry of one request shares. */
function from(req: Request, ctx: RequestContext): Pick<OAuthAuditEntry, "ip" | "user_agent"> {
  return { ip: ctx.peer.address, user_agent: req.headers.get("user-agent") ?? undefined };
}

function subjectDeps(ctx: RequestContext): SubjectDeps {
  const { deps } = ctx;
  return {
    store: deps.store,
    credentials: deps.operator.credentials,
    rules: deps.config.auth.oidc?.roles ?? [],
    now: deps.now,
  };
}

/** The group a grant's subject acts in now, or the `invalid_grant` that says why it may not act. */
async function groupNow(ctx: RequestContext, grant: OAuthGrant): Promise<string> {
  try {
    return (await standingOf(subjectDeps(ctx), grant.subject)).group.name;
  } catch (err) {
    if (err instanceof NoStanding) throw oauthError("invalid_grant", `The grant no longer stands: ${err.message}`);
    throw err;
  }
}

/** The token response (RFC 6749, section 5.1). */
function tokenAnswer(tokens: IssuedTokens): Response {
  return oauthJson({
    access_token: tokens.access_token,
    token_type: "Bearer",
    expires_in: tokens.expires_in,
    refresh_token: tokens.refresh_token,
  });
}

/** How a refusal is counted: its event, and `reused` or `revoked` when it ended the grant. */
interface Refusal {
  event: "token" | "refresh";
  revoke?: boolean;
  outcome?: OAuthOutcome;
}

/** Refuses a request about a known grant, counted and recorded in the audit trail; `revoke` ends the grant too. */
async function refuse(
  req: Request,
  ctx: RequestContext,
  grant: OAuthGrant,
  err: GatewayError,
  how: Refusal = { event: "token" },
): Promise<never> {
  const revoked = how.revoke && await revokeGrant(ctx.deps.store, grant.id);
  ctx.deps.oauth.count(how.event, how.outcome ?? (revoked ? "revoked" : "refused"));
  await ctx.deps.oauth.audit({
    who: whoOf(grant),
    action: revoked ? "oauth_grant.revoke" : "oauth.refused",
    target: grant.id,
    before: revoked ? grantView(revoked) : null,
    after: { step: "token", reason: err.message, client_name: grant.client_name },
    ...from(req, ctx),
  });
  throw err;
}

/** What makes a token request unfit for the code it redeems, as an OAuth error code and its description. */
async function codeProblem(form: URLSearchParams, record: CodeRecord): Promise<[string, string] | undefined> {
  const { grant } = record;
  if (form.get("client_id") !== grant.client_id) {
    return ["invalid_grant", "client_id: the code was issued to another client"];
  }
  if (form.get("redirect_uri") !== record.redirect_uri) {
    return ["invalid_grant", "redirect_uri: not the one the code was issued for"];
  }
  if (!await verifierMatches(form.get("code_verifier"), record.code_challenge)) {
    return ["invalid_grant", "code_verifier: missing, or not the verifier of the code_challenge"];
  }
  const resource = form.get("resource");
  if (resource !== null && !sameResource(resource, grant.resource)) {
    return ["invalid_target", `resource: must be ${grant.resource}`];
  }
  return undefined;
}

/** grant_type=authorization_code. */
async function redeem(req: Request, ctx: RequestContext, form: URLSearchParams): Promise<Response> {
  const { deps } = ctx;
  const code = form.get("code");
  const redeemed: Redeemed = code ? await redeemCode(deps.store, code, deps.now().getTime()) : { status: "unknown" };
  if (redeemed.status !== "ok" && redeemed.status !== "reused") {
    deps.operator.guard.attempt("token", ctx.peer.address).failed();
    deps.oauth.count("token", "refused");
    throw oauthError("invalid_grant", `code: ${redeemed.status === "expired" ? "expired" : "unknown"}`);
  }
  if (redeemed.status === "reused") {
    const reused = { event: "token", revoke: true, outcome: "reused" } as const;
    return await refuse(req, ctx, redeemed.record.grant, oauthError("invalid_grant", "code: used already"), reused);
  }
  const { grant } = redeemed.record;
  const problem = await codeProblem(form, redeemed.record);
  if (problem) return await refuse(req, ctx, grant, oauthError(...problem));
  const group = await groupNow(ctx, grant).catch((err) => refuse(req, ctx, grant, err));
  const tokens = await startGrant(deps.store, grant, deps.now().getTime(), deps.oauth.lives);
  const client = await findClient(deps.store, grant.client_id, { fetch: deps.oauth.fetch, now: deps.now() }).catch(
    () => undefined,
  );
  if (client) await keepClient(deps.store, client);
  deps.oauth.count("token", "ok");
  await deps.oauth.audit({
    who: whoOf(grant),
    action: "oauth_grant.create",
    target: grant.id,
    after: grantView(tokens.grant, group),
    ...from(req, ctx),
  });
  return tokenAnswer(tokens);
}

/** grant_type=refresh_token. */
async function refresh(req: Request, ctx: RequestContext, form: URLSearchParams): Promise<Response> {
  const { deps } = ctx;
  const token = form.get("refresh_token");
  let group = "";
  const refreshed = token
    ? await refreshGrant(deps.store, token, {
      now: deps.now().getTime(),
      lives: deps.oauth.lives,
      async accept(grant) {
        const how = { event: "refresh" } as const;
        if (form.get("client_id") !== grant.client_id) {
          const err = oauthError("invalid_grant", "client_id: the token was issued to another client");
          await refuse(req, ctx, grant, err, how);
        }
        const resource = form.get("resource");
        if (resource !== null && !sameResource(resource, grant.resource)) {
          await refuse(req, ctx, grant, oauthError("invalid_target", `resource: must be ${grant.resource}`), how);
        }
        group = await groupNow(ctx, grant).catch((err) => refuse(req, ctx, grant, err, { ...how, revoke: true }));
      },
    })
    : { status: "unknown" as const };
  if (refreshed.status === "unknown") {
    deps.operator.guard.attempt("token", ctx.peer.address).failed();
    deps.oauth.count("refresh", "refused");
    throw oauthError("invalid_grant", "refresh_token: unknown, expired or revoked");
  }
  if (refreshed.status === "reused") {
    deps.oauth.count("refresh", "reused");
    await deps.oauth.audit({
      who: whoOf(refreshed.grant),
      action: "oauth_grant.revoke",
      target: refreshed.grant.id,
      before: grantView(refreshed.grant),
      after: {
        step: "refresh",
        reason: "a rotated refresh token was used again",
        client_name: refreshed.grant.client_name,
      },
      ...from(req, ctx),
    });
    throw oauthError("invalid_grant", "refresh_token: used already; the grant is revoked, sign in again");
  }
  deps.oauth.count("refresh", "ok");
  await deps.oauth.audit({
    who: whoOf(refreshed.tokens.grant),
    action: "oauth_grant.refresh",
    target: refreshed.tokens.grant.id,
    before: grantView(refreshed.before),
    after: grantView(refreshed.tokens.grant, group),
    ...from(req, ctx),
  });
  return tokenAnswer(refreshed.tokens);
}

/** `POST /oauth/token`. */
export async function tokenEndpoint(req: Request, ctx: RequestContext): Promise<Response> {
  const form = await readForm(req, ctx.deps.config.body_idle_timeout_ms);
  const type = form.get("grant_type");
  if (type === "authorization_code") return await redeem(req, ctx, form);
  if (type === "refresh_token") return await refresh(req, ctx, form);
  ctx.deps.oauth.count("token", "refused");
  throw oauthError("unsupported_grant_type", "grant_type: only authorization_code and refresh_token are supported");
}

/** `POST /oauth/revoke`: ends the grant of an access or refresh token of the calling client; 200 whatever it was. */
export async function revokeEndpoint(req: Request, ctx: RequestContext): Promise<Response> {
  const { deps } = ctx;
  const form = await readForm(req, deps.config.body_idle_timeout_ms);
  const token = form.get("token");
  if (!token) throw oauthError("invalid_request", "token: required");
  const grant = await grantOfSecret(deps.store, token, deps.now().getTime());
  if (grant && grant.client_id === form.get("client_id")) {
    const revoked = await revokeGrant(deps.store, grant.id);
    if (revoked) {
      deps.oauth.count("revoke", "ok");
      await deps.oauth.audit({
        who: whoOf(grant),
        action: "oauth_grant.revoke",
        target: grant.id,
        before: grantView(revoked),
        after: { step: "revoke", reason: "the client revoked it", client_name: grant.client_name },
        ...from(req, ctx),
      });
    }
  }
  if (req.body && !req.bodyUsed) await req.body.cancel();
  return oauthJson({});
}

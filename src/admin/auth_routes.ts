/**
 * @module The people's own endpoints under /auth, which need no admin key: the CLI's sign-in through the device
 * authorization grant (`POST /auth/device` starts it, `POST /auth/device/token` polls it and, once the person has
 * confirmed, mints their token in a group their role allows) and `POST /auth/logout`, which revokes the token that
 * calls it. Tokens made and revoked here are recorded in the audit trail under the person's email.
 */
import { deviceError } from "../access/device_grant.ts";
import { grantNow, overrideKey, personTag, recordSignIn, type RoleOverride } from "../access/people.ts";
import type { Grant, Person } from "../access/roles.ts";
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { readJsonObject } from "../core/request_body.ts";
import type { TokenRecord } from "../core/principal.ts";
import type { Deps, Endpoint, RequestContext } from "../handlers/context.ts";
import { type Actor, auditTrail } from "./audit.ts";
import { whereFrom } from "./routes.ts";

/** The name a login's token gets when the CLI sends none. */
const LOGIN_TOKEN_NAME = "modelgate login";

/** The error codes of RFC 6749 (section 5.2) and RFC 8628 (section 3.5) that the device endpoints answer with. */
const OAUTH_CODES = new Set([
  "invalid_request",
  "invalid_grant",
  "unsupported_grant_type",
  "authorization_pending",
  "slow_down",
  "access_denied",
  "expired_token",
  "server_error",
]);

/** An error in OAuth's shape, which the CLI (as any device-flow client) reads; internal errors go to the app. */
function oauthError(err: GatewayError): Response {
  const code = err.code !== null && OAUTH_CODES.has(err.code)
    ? err.code
    : err.kind === "rate_limit"
    ? "slow_down"
    : err.status >= 500
    ? "server_error"
    : "invalid_request";
  return json({ error: code, error_description: err.message }, { status: err.status, headers: err.headers });
}

/** A device endpoint: on when `auth.oidc` is set, errors in OAuth's shape. */
function device(path: string, handle: (req: Request, ctx: RequestContext) => Promise<Response>): Endpoint {
  return {
    method: "POST",
    path,
    errors: () => "openai-chat",
    async handle(req, ctx) {
      try {
        if (!ctx.deps.device) {
          throw deviceError("invalid_request", "This gateway has no sign-in for people (auth.oidc is not set)", 404);
        }
        return await handle(req, ctx);
      } catch (err) {
        if (!(err instanceof GatewayError) || err.kind === "internal") throw err;
        if (req.body && !req.bodyUsed) await req.body.cancel().catch(() => {});
        return oauthError(err);
      }
    },
  };
}

/**
 * What a person may do: an operator's change in KV beats the config's rules. A person no rule admits, or whom an
 * operator removed, gets `access_denied`.
 */
async function grantOf(deps: Deps, person: Person): Promise<Grant> {
  const override = await deps.store.kv.get<RoleOverride>(overrideKey(await personTag(person.email)));
  const grant = grantNow(person, deps.config.auth.oidc?.roles ?? [], override.value);
  if (!grant) {
    throw deviceError("access_denied", `${person.email} matches no rule of this gateway's sign-in; ask an operator`);
  }
  return grant;
}

/**
 * The group a person's token goes in: the one asked for, else the first their grant allows, when the grant allows it
 * and it exists; else `access_denied` saying why.
 */
async function tokenGroup(deps: Deps, person: Person, grant: Grant, asked?: string): Promise<string> {
  const allowed = grant.token_groups;
  if (allowed.length === 0) {
    throw deviceError("access_denied", `${person.email} (${grant.role}) may not make tokens: no token groups allowed`);
  }
  const group = asked ?? allowed[0];
  if (!allowed.includes(group)) {
    throw deviceError("access_denied", `${person.email} may make tokens in ${allowed.join(", ")}, not in "${group}"`);
  }
  if (!await deps.store.getGroup(group)) {
    throw deviceError("access_denied", `The group "${group}" does not exist on this gateway; ask an operator`);
  }
  return group;
}

/** A string field of the poll's body, or a 400 naming it. */
function field(body: Record<string, unknown>, name: string, max: number): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length === 0 || value.length > max) {
    throw deviceError("invalid_request", `${name}: must be a string of 1 to ${max} characters`);
  }
  return value;
}

/** Records a person's change to their own token. */
async function record(deps: Deps, actor: Actor, action: string, before: TokenRecord | null, after: TokenRecord) {
  const audit = auditTrail(deps.store.kv, { days: deps.config.audit.days, writes: deps.store.writes });
  await audit.record(actor, { time: deps.now(), action, target: after.id, before, after });
}

/** POST /auth/device: starts a grant; every start counts against the address. */
async function startGrant(req: Request, ctx: RequestContext): Promise<Response> {
  ctx.deps.operator.guard.attempt("device", ctx.peer.address).failed();
  if (req.body) await req.body.cancel();
  return json(await ctx.deps.device!.start());
}

/** POST /auth/device/token: polls the grant; once confirmed, the person's token in a group their role allows. */
async function pollGrant(req: Request, ctx: RequestContext): Promise<Response> {
  const { deps } = ctx;
  const attempt = deps.operator.guard.attempt("device", ctx.peer.address);
  const limits = { maxBytes: deps.config.max_body_bytes, idleMs: deps.config.body_idle_timeout_ms };
  const body = await readJsonObject(req, limits);
  const handle = field(body, "device_code", 256);
  if (handle === undefined) throw deviceError("invalid_request", "device_code: required");
  const asked = field(body, "group", 64);
  const name = field(body, "name", 100) ?? LOGIN_TOKEN_NAME;
  const person = await deps.device!.poll(handle, () => attempt.failed()).catch((err) => {
    // An id_token that does not verify is a refused sign-in, in the device flow's words.
    if (err instanceof GatewayError && err.kind === "authentication") throw deviceError("access_denied", err.message);
    throw err;
  });
  const now = deps.now();
  await recordSignIn(deps.store, person, { now, rules: deps.config.auth.oidc?.roles ?? [], log: deps.log });
  const grant = await grantOf(deps, person);
  const group = await tokenGroup(deps, person, grant, asked);
  // The person signs in again after it: the operator's default for personal tokens (auth.personal_tokens).
  const days = deps.config.auth.personal_tokens.default_days;
  const { secret, record: token } = await deps.store.createToken({
    group,
    name,
    owner: person.email,
    expiresAt: new Date(now.getTime() + days * 86_400_000),
    now,
  });
  const actor: Actor = {
    name: person.email,
    role: grant.role,
    email: person.email,
    token_groups: grant.token_groups,
    ...whereFrom(req, ctx, "api"),
  };
  await record(deps, actor, "token.create", null, token);
  return json({ token: secret, token_id: token.id, group, owner: person.email, expires_at: token.expires_at ?? null });
}

/** POST /auth/logout: the caller's own token, found by its bearer, is revoked. Errors use OpenAI's shape. */
const LOGOUT: Endpoint = {
  method: "POST",
  path: "/auth/logout",
  errors: () => "openai-chat",
  async handle(req, ctx) {
    const { token } = await ctx.authenticate();
    if (req.body) await req.body.cancel();
    if (!token.owner) {
      // An operator handed this token out: revoking it is theirs to decide, not whoever holds the secret.
      throw new GatewayError(
        "permission",
        `Token "${token.id}" belongs to no person (it has no owner), so it cannot sign itself out; an operator ` +
          "revokes it",
      );
    }
    const { store } = ctx.deps;
    const before = await store.getToken(token.id);
    const after = await store.revokeToken(token.id);
    if (!before || !after) throw new GatewayError("authentication", "Invalid API key");
    const actor: Actor = { name: token.owner, role: "member", email: token.owner, ...whereFrom(req, ctx, "api") };
    await record(ctx.deps, actor, "token.revoke", before, after);
    return json({ revoked: after.id });
  },
};

/** The /auth endpoints, for the app's endpoint table. */
export const AUTH_ENDPOINTS: readonly Endpoint[] = [
  device("/auth/device", startGrant),
  device("/auth/device/token", pollGrant),
  LOGOUT,
];

/**
 * @module Console sign-in through the identity provider: `GET /ui/auth/oidc` sends the browser to the provider
 * (authorization code with PKCE S256; the flow kept as oidc_flow.ts says), and `GET /ui/auth/callback` checks the
 * state, consumes the flow (once, on any instance), exchanges the code, verifies the id_token and its nonce, and starts
 * a session with the role an override in KV or the first matching rule gives; a person with none is refused. Failed
 * callbacks are charged to the address (the guard's `sign_in`), never answered with a 500.
 */
import { type OidcClient, randomToken, type SignedIn } from "../access/oidc.ts";
import { attachSubject } from "../access/oauth_pending.ts";
import { grantNow, overrideKey, personTag, recordSignIn, type RoleOverride } from "../access/people.ts";
import type { Store } from "../access/store.ts";
import type { OidcConfig } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { html } from "./html.ts";
import { consumeFlow, type Flow, FLOW_MS, flowCookie, readFlow, rememberFlow, sealFlow } from "./oidc_flow.ts";
import { pageResponse, redirect } from "./page.ts";
import { sessionCookie, type SessionLimits, startSession } from "./session.ts";

/** Where the provider sends the browser back: the configured URL, else this host's callback as the browser named it. */
function redirectUri(config: OidcConfig, ctx: RequestContext): string {
  // The host was checked against public_hosts (through trusted proxies only) before any operator route runs.
  return config.redirect_url ?? `${ctx.peer.https ? "https" : "http"}://${ctx.peer.authority}/ui/auth/callback`;
}

/** A page saying why signing in did not work, with the way back to the sign-in page. */
function refusedPage(status: number, text: string, headers?: HeadersInit): Response {
  const body = html`<p><a href="/ui/">Back to sign-in</a></p>`;
  return pageResponse({ title: "Not signed in", body, notice: { text, tone: "bad" } }, status, headers);
}

/**
 * `GET /ui/auth/oidc`: sends the browser to the provider, then back to `next` once signed in; with `oauth`, the id of
 * an MCP client's authorization request, the person signs in for that request and starts no console session.
 */
export async function startOidc(
  ctx: RequestContext,
  oidc: OidcClient,
  adminKey: string,
  next: string,
  oauth?: string,
): Promise<Response> {
  const config = ctx.deps.config.auth.oidc!;
  const flow: Flow = {
    state: randomToken(),
    nonce: randomToken(),
    verifier: randomToken(),
    redirect: redirectUri(config, ctx),
    next,
    ...oauth === undefined ? {} : { oauth },
    expires_at: ctx.deps.now().getTime() + FLOW_MS,
  };
  let url: URL;
  try {
    url = await oidc.authorizationUrl({ ...flow, redirectUri: flow.redirect, codeVerifier: flow.verifier });
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return refusedPage(err.status, err.message);
  }
  await rememberFlow(ctx.deps.store, flow);
  const cookie = flowCookie(await sealFlow(adminKey, flow), ctx.peer.https);
  return redirect(url.href, { "set-cookie": cookie });
}

/**
 * Checks the callback's state, consumes its flow, checks the code and answers the person the id_token names; throws a
 * 401 refusal.
 */
async function personOf(url: URL, flow: Flow | undefined, oidc: OidcClient, store: Store): Promise<SignedIn> {
  if (!flow) {
    throw new GatewayError("authentication", "This sign-in was not started here, or took too long; sign in again");
  }
  if (url.searchParams.get("state") !== flow.state) {
    throw new GatewayError("authentication", "This sign-in's state does not match the one it started with");
  }
  // A callback replayed with its cookie, here or on another instance, never reaches the provider again.
  if (!await consumeFlow(store, flow.state)) {
    throw new GatewayError("authentication", "This sign-in was finished already; sign in again");
  }
  const error = url.searchParams.get("error");
  if (error !== null) {
    // The provider's error code is a short token (RFC 6749, section 4.1.2.1); anything else is not repeated.
    const code = /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(error) ? error : "an error";
    throw new GatewayError("authentication", `The identity provider did not sign you in (${code})`);
  }
  const code = url.searchParams.get("code");
  if (!code) throw new GatewayError("authentication", "The identity provider sent no code");
  const idToken = await oidc.exchangeCode({ code, redirectUri: flow.redirect, codeVerifier: flow.verifier });
  return await oidc.verifyIdToken(idToken, { nonce: flow.nonce });
}

/** `GET /ui/auth/callback`: finishes a sign-in, or refuses it with a page that says why. */
export async function finishOidc(
  req: Request,
  ctx: RequestContext,
  oidc: OidcClient,
  adminKey: string,
  limits: SessionLimits,
): Promise<Response> {
  const { deps, peer } = ctx;
  let attempt;
  try {
    attempt = deps.operator.guard.attempt("sign_in", peer.address);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return refusedPage(err.status, err.message, err.headers);
  }
  const clear = flowCookie(undefined, peer.https);
  const now = deps.now();
  const flow = await readFlow(req, adminKey, peer.https, now.getTime());
  const { store } = deps;
  let person: SignedIn;
  try {
    person = await personOf(new URL(req.url), flow, oidc, store);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    // Only what the browser brought is charged to its address; a provider that is down is nobody's guess.
    if (err.status === 401) attempt.failed();
    deps.log({ level: "warn", event: "console_sign_in_refused", client: peer.address, reason: err.message });
    return refusedPage(err.status, err.message, { "set-cookie": clear });
  }
  const override = await store.kv.get<RoleOverride>(overrideKey(await personTag(person.email)));
  const rules = deps.config.auth.oidc!.roles;
  await recordSignIn(store, person, { now, rules, log: deps.log });
  const grant = grantNow(person, rules, override.value);
  if (!grant) {
    deps.log({ level: "warn", event: "console_sign_in_no_role", client: peer.address, email: person.email });
    const text = `${person.email} has no role on this gateway. An owner or admin can give you one.`;
    return refusedPage(403, text, { "set-cookie": clear });
  }
  if (flow!.oauth !== undefined) {
    // An MCP client's sign-in: the person is noted on its request, whose consent page comes next (see docs/mcp.md).
    const subject = { kind: "person", email: person.email } as const;
    const noted = await attachSubject(store, flow!.oauth, subject, now.getTime());
    deps.log({ event: "oauth_sign_in", client: peer.address, email: person.email, role: grant.role });
    if (!noted) {
      return refusedPage(410, "This sign-in took too long; start again from your app.", { "set-cookie": clear });
    }
    return redirect(`/oauth/consent?request=${encodeURIComponent(flow!.oauth)}`, { "set-cookie": clear });
  }
  // A role removed while this sign-in ran is not undone by it: the session is written only if the override read is
  // still the one in KV.
  const options = { ...limits, now, person: { email: person.email, ...grant }, check: override };
  const session = await store.writes.write("console_session", () => startSession(store.kv, adminKey, options));
  if (!session) {
    return refusedPage(409, "Your role changed while you were signing in; sign in again.", { "set-cookie": clear });
  }
  deps.log({ event: "console_sign_in", client: peer.address, email: person.email, role: grant.role });
  return redirect(flow!.next, [
    ["set-cookie", sessionCookie({ ...session, now }, peer.https)],
    ["set-cookie", clear],
  ]);
}

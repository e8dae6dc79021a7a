/**
 * @module Console sign-in through the identity provider: `GET /ui/auth/oidc` sends the browser to the provider
 * (authorization code with PKCE S256; state, nonce and verifier in a short-lived cookie signed with a key derived from
 * the admin key), and `GET /ui/auth/callback` checks the state, exchanges the code, verifies the id_token and its
 * nonce, and starts a session with the role an override in KV or the first matching rule gives; a person with none is
 * refused. Failed callbacks are charged to the address (the guard's `sign_in`), never answered with a 500.
 */
import { sameSecret } from "../access/auth.ts";
import { type OidcClient, randomToken } from "../access/oidc.ts";
import { overrideKey, type PersonSeen, personTag, type RoleOverride, seenKey } from "../access/people.ts";
import { type Grant, grantFor, type Person } from "../access/roles.ts";
import type { OidcConfig } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { html } from "./html.ts";
import { pageResponse, redirect } from "./page.ts";
import { sessionCookie, type SessionLimits, startSession } from "./session.ts";

/** The flow cookie over http (for /ui/auth only) and over https (`__Host-`: Secure, whole host, this host's alone). */
const FLOW_COOKIE = "modelgate_oidc";
const HOST_FLOW_COOKIE = "__Host-modelgate_oidc";
/** How long a browser may spend at the provider between starting and finishing a sign-in. */
const FLOW_MS = 10 * 60_000;

/** What one sign-in remembers between its start and its callback. */
export interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  redirect: string;
  next: string;
  expires_at: number;
}

const encoder = new TextEncoder();

async function flowMac(adminKey: string, payload: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(adminKey), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`modelgate oidc flow ${payload}`));
  return new Uint8Array(mac).toBase64({ alphabet: "base64url", omitPadding: true });
}

/** A flow as the cookie carries it: its JSON in base64url, a dot, and its MAC. */
export async function sealFlow(adminKey: string, flow: Flow): Promise<string> {
  const payload = encoder.encode(JSON.stringify(flow)).toBase64({ alphabet: "base64url", omitPadding: true });
  return `${payload}.${await flowMac(adminKey, payload)}`;
}

/**
 * The Set-Cookie value carrying `flow`, or one removing it. SameSite=Lax, since the provider sends the browser back
 * with a top-level navigation from its own site, where a Strict cookie would stay behind.
 */
function flowCookie(value: string | undefined, https: boolean): string {
  const scope = https ? "Path=/; HttpOnly; SameSite=Lax; Secure" : "Path=/ui/auth; HttpOnly; SameSite=Lax";
  const life = value === undefined ? "Max-Age=0" : `Max-Age=${FLOW_MS / 1000}`;
  return `${https ? HOST_FLOW_COOKIE : FLOW_COOKIE}=${value ?? ""}; ${life}; ${scope}`;
}

/** The flow the request's cookie carries, when its MAC is good and it has not expired; else undefined. */
async function readFlow(req: Request, adminKey: string, https: boolean, now: number): Promise<Flow | undefined> {
  const wanted = https ? HOST_FLOW_COOKIE : FLOW_COOKIE;
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const [name, value] = part.trim().split("=", 2);
    if (name !== wanted || !value) continue;
    const [payload, mac] = value.split(".", 2);
    if (!payload || !mac || !await sameSecret(mac, await flowMac(adminKey, payload))) return undefined;
    try {
      const flow = JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(payload, { alphabet: "base64url" })));
      return typeof flow?.expires_at === "number" && flow.expires_at > now ? flow as Flow : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

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

/** `GET /ui/auth/oidc`: sends the browser to the provider, then back to `next` once signed in. */
export async function startOidc(
  ctx: RequestContext,
  oidc: OidcClient,
  adminKey: string,
  next: string,
): Promise<Response> {
  const config = ctx.deps.config.auth.oidc!;
  const flow: Flow = {
    state: randomToken(),
    nonce: randomToken(),
    verifier: randomToken(),
    redirect: redirectUri(config, ctx),
    next,
    expires_at: ctx.deps.now().getTime() + FLOW_MS,
  };
  let url: URL;
  try {
    url = await oidc.authorizationUrl({ ...flow, redirectUri: flow.redirect, codeVerifier: flow.verifier });
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return refusedPage(err.status, err.message);
  }
  const cookie = flowCookie(await sealFlow(adminKey, flow), ctx.peer.https);
  return redirect(url.href, { "set-cookie": cookie });
}

/** The grant a person has now: an override in KV beats the rules; undefined when they have none. */
function grantOf(person: Person, rules: OidcConfig["roles"], override: RoleOverride | null): Grant | undefined {
  if (override) {
    return override.role === null ? undefined : { role: override.role, token_groups: override.token_groups };
  }
  return grantFor(person, rules);
}

/** Checks the callback's state and code and answers the person the id_token names; throws a 401 refusal. */
async function personOf(url: URL, flow: Flow | undefined, oidc: OidcClient): Promise<Person> {
  if (!flow) {
    throw new GatewayError("authentication", "This sign-in was not started here, or took too long; sign in again");
  }
  if (url.searchParams.get("state") !== flow.state) {
    throw new GatewayError("authentication", "This sign-in's state does not match the one it started with");
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
  let person: Person;
  try {
    person = await personOf(new URL(req.url), flow, oidc);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    // Only what the browser brought is charged to its address; a provider that is down is nobody's guess.
    if (err.status === 401) attempt.failed();
    deps.log({ level: "warn", event: "console_sign_in_refused", client: peer.address, reason: err.message });
    return refusedPage(err.status, err.message, { "set-cookie": clear });
  }
  const { store } = deps;
  const tag = await personTag(person.email);
  const override = await store.kv.get<RoleOverride>(overrideKey(tag));
  const rules = deps.config.auth.oidc!.roles;
  const seen: PersonSeen = { ...person, signed_in_at: now.toISOString() };
  await store.writes.write("console_person", () => store.kv.set(seenKey(tag), seen));
  const grant = grantOf(person, rules, override.value);
  if (!grant) {
    deps.log({ level: "warn", event: "console_sign_in_no_role", client: peer.address, email: person.email });
    const text = `${person.email} has no role on this gateway. An owner or admin can give you one.`;
    return refusedPage(403, text, { "set-cookie": clear });
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

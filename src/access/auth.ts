/**
 * @module Client credentials: reading them from a request as its protocol sends them (Gemini's its own way) and
 * resolving them to a live token and its group; a token whose owner has no role on the gateway any more is suspended.
 */
import { GatewayError } from "../core/errors.ts";
import type { Group, Principal, TokenRecord } from "../core/principal.ts";
import type { ServedProtocol } from "../core/types.ts";
import type { AuthGuard } from "./guard.ts";
import { isAccessToken } from "./oauth_rules.ts";
import type { Suspension } from "./people.ts";
import { hashToken, type Store } from "./store.ts";

export { hashToken };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token secret from `x-api-key` or `Authorization: Bearer`; x-api-key wins when both are sent. */
export function readCredential(headers: Headers): string | undefined {
  const apiKey = headers.get("x-api-key")?.trim();
  if (apiKey) return apiKey;
  return BEARER.exec(headers.get("authorization") ?? "")?.[1];
}

/** The token as a Gemini client sends it: `x-goog-api-key`, else the `key` query parameter. */
export function readGoogleCredential(req: Request): string | undefined {
  const header = req.headers.get("x-goog-api-key")?.trim();
  if (header) return header;
  return new URL(req.url).searchParams.get("key")?.trim() || undefined;
}

/**
 * The 401 for a request {@linkcode readCredential} finds no credential in: an Authorization header that is there but
 * not `Bearer <key>` alone is named as malformed (never quoted: it may hold a secret), else the key is missing.
 */
export function noCredential(headers: Headers, what: "API key" | "admin key"): GatewayError {
  const authorization = headers.get("authorization");
  if (authorization !== null && authorization.trim() !== "") {
    return new GatewayError(
      "authentication",
      `Malformed Authorization header: send "Bearer <${what}>" with nothing after the key, or the key as x-api-key`,
    );
  }
  return new GatewayError("authentication", `Missing ${what}: send it as x-api-key or Authorization: Bearer`);
}

/** True when `a` equals `b`, in time that does not depend on where they differ. */
export async function sameSecret(a: string, b: string): Promise<boolean> {
  const encoder = new TextEncoder();
  // Hashing first gives equal lengths, so neither the length nor the first difference shows in the timing.
  const [x, y] = await Promise.all(
    [a, b].map(async (text) => new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)))),
  );
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

/** A token as found, with its group, or null for the group when it no longer exists. */
export interface Resolved {
  token: TokenRecord;
  group: Group | null;
  /** Set when the token's owner may not use it now (see access/people.ts). */
  suspended?: Suspension;
}

/** Judges whether a person's tokens may be used now; see {@linkcode suspensionOf} in access/people.ts. */
export type OwnerJudge = (owner: string) => Promise<Suspension | undefined>;

/** Where tokens are looked up: KV directly, or a cache in front of it (see auth_cache.ts). */
export interface Credentials {
  /** The token with this secret's SHA-256 hash, or null. */
  byHash(hash: string): Promise<Resolved | null>;
  /** The token with this secret, when the source can skip the hash (a cache that has seen it). */
  bySecret?(secret: string): Promise<Resolved | null>;
}

/** Credentials read from KV on every call; with `judge`, a token that names an owner is judged by its owner's role. */
export function storeCredentials(store: Store, judge?: OwnerJudge): Credentials {
  async function withGroup(token: TokenRecord | null): Promise<Resolved | null> {
    if (!token) return null;
    const [group, suspended] = await Promise.all([
      store.getGroup(token.group),
      token.owner && judge ? judge(token.owner) : undefined,
    ]);
    return { token, group, ...suspended ? { suspended } : {} };
  }
  return {
    byHash: async (hash) => withGroup(await store.findTokenByHash(hash)),
  };
}

/** Marks the 401 for a credential that is no token at all, as opposed to a known token that is disabled or expired. */
const UNKNOWN_CREDENTIAL = Symbol("unknown credential");

/** True when `err` says the credential matched no token: a guess, or a typo, rather than a token out of use. */
export function isUnknownCredential(err: unknown): boolean {
  return err instanceof GatewayError && err.cause === UNKNOWN_CREDENTIAL;
}

/** Resolves a credential to a live token and its group; anything else is a 401. */
export async function authenticate(
  credentials: Credentials,
  credential: string | undefined,
  now: Date,
): Promise<Principal> {
  if (!credential) {
    throw new GatewayError("authentication", "Missing API key: send it as x-api-key or Authorization: Bearer");
  }
  // An OAuth access token of /mcp is bound to it (docs/mcp.md, "Signing in with OAuth"): named, never looked up here.
  if (isAccessToken(credential)) {
    throw new GatewayError("authentication", "OAuth access tokens of this gateway are accepted on /mcp only");
  }
  const found = !credential.startsWith("sk-")
    ? null
    : credentials.bySecret
    ? await credentials.bySecret(credential)
    : await credentials.byHash(await hashToken(credential));
  return checkResolved(found, now);
}

/** The principal of a token as found, or the 401 (403 for a deleted group) that says why it may not be used now. */
export function checkResolved(found: Resolved | null, now: Date): Principal {
  if (!found) throw new GatewayError("authentication", "Invalid API key", { cause: UNKNOWN_CREDENTIAL });
  const { token, group } = found;
  if (token.disabled) throw new GatewayError("authentication", "API key is disabled");
  if (token.expires_at && Date.parse(token.expires_at) <= now.getTime()) {
    throw new GatewayError("authentication", "API key has expired");
  }
  if (found.suspended) {
    const why = found.suspended === "removed"
      ? "an operator removed its owner's role"
      : "its owner matches no sign-in rule of this gateway";
    throw new GatewayError("authentication", `API key is suspended: ${why}`);
  }
  if (!group) throw new GatewayError("permission", `API key's group "${token.group}" no longer exists`);
  return { token, group };
}

/**
 * {@linkcode authenticate} behind the guard, as every request that carries a token goes: while `address` has no
 * attempt left this is the guard's 429 before the credential is looked at, and a credential that is no token at all is
 * charged to the address (a disabled or expired one is no guess and costs nothing).
 */
export async function authenticateFrom(
  guard: AuthGuard,
  credentials: Credentials,
  from: { credential: string; address: string; now: Date },
): Promise<Principal> {
  const attempt = guard.attempt("token", from.address);
  try {
    return await authenticate(credentials, from.credential, from.now);
  } catch (err) {
    if (isUnknownCredential(err)) attempt.failed();
    throw err;
  }
}

/** What authenticating a request needs besides the request itself. */
export interface RequestAuth {
  guard: AuthGuard;
  credentials: Credentials;
  /** The client's address, charged for a credential that is no token. */
  address: string;
  now: Date;
  /** True while request URLs are traced: a span attribute cannot be taken back, so a key in the URL is refused. */
  urlTraced?: boolean;
}

/**
 * The caller of a request, by the credential its protocol sends: `x-api-key` or `Authorization: Bearer`, and for a
 * Gemini client `x-goog-api-key` or the `key` query parameter first (the parameter refused while URLs are traced).
 */
export async function authenticateRequest(
  req: Request,
  protocol: ServedProtocol,
  auth: RequestAuth,
): Promise<Principal> {
  // Gemini clients send the key their own way; the key query parameter never reaches a log (only the route does).
  const gemini = protocol === "gemini";
  // The runtime's server span records the URL before the gateway sees it, and a span attribute cannot be taken
  // back: while tracing is on, a key in the URL is refused, so no client keeps sending it (docs/operating.md).
  if (gemini && auth.urlTraced && new URL(req.url).searchParams.has("key")) {
    throw new GatewayError(
      "authentication",
      "The key query parameter is refused here because request URLs are traced: send the API key as the " +
        "x-goog-api-key header instead",
    );
  }
  const credential = (gemini ? readGoogleCredential(req) : undefined) ?? readCredential(req.headers);
  if (!credential && gemini) {
    throw new GatewayError("authentication", "Missing API key: send it as x-goog-api-key or the key parameter");
  }
  if (!credential) throw noCredential(req.headers, "API key");
  return await authenticateFrom(auth.guard, auth.credentials, { credential, address: auth.address, now: auth.now });
}

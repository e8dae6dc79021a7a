/**
 * @module The rules of the gateway's OAuth authorization server for /mcp that need no KV and no network: which
 * redirect URIs a client may register and how a request's one matches them, the PKCE S256 check, the resource a token
 * is for, what a client id metadata document's URL may be, and the shape of the secrets the gateway hands out
 * (see docs/mcp.md, "Signing in with OAuth"). Pure.
 */
import { isLoopback, parseIp } from "../core/addresses.ts";
import type { Peer } from "../core/peer.ts";

/** The longest redirect URI, client id URL or state the gateway keeps. */
export const MAX_URI_LENGTH = 2000;

/** Schemes that are no app's own: a browser would run, show or fetch them rather than hand them to an app. */
const NOT_PRIVATE_USE = new Set([
  "javascript",
  "data",
  "vbscript",
  "file",
  "blob",
  "about",
  "filesystem",
  "view-source",
  "ws",
  "wss",
  "ftp",
  "mailto",
  "tel",
  "sms",
  "intent",
  "chrome",
  "chrome-extension",
]);

/** The URL a text names, or undefined when it names none. */
function parsed(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** A loopback `http` URL: a native app's listener on this machine, whose port may change (RFC 8252, section 7.3). */
function loopbackHttp(url: URL): boolean {
  return url.protocol === "http:" && isLoopback(url.hostname.replace(/^\[|\]$/g, ""));
}

/**
 * Why `uri` may not be registered as a redirect URI, or undefined when it may: `https` anywhere, `http` only to a
 * loopback address (a native app's listener), or a private-use scheme as native apps register (`cursor://...`);
 * never plain `http` to another host, never a fragment, never a scheme a browser would run itself.
 */
export function redirectProblem(uri: string): string | undefined {
  if (uri.length > MAX_URI_LENGTH) return `is longer than ${MAX_URI_LENGTH} characters`;
  const url = parsed(uri);
  if (!url) return "is not a URL";
  if (url.hash !== "" || uri.includes("#")) return "must not have a fragment";
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  const scheme = url.protocol.slice(0, -1);
  if (scheme === "https") return url.hostname === "" ? "must name a host" : undefined;
  if (scheme === "http") {
    return loopbackHttp(url) ? undefined : "must be https, or http only to a loopback address (localhost, 127.0.0.1)";
  }
  if (NOT_PRIVATE_USE.has(scheme)) return `must not use the ${scheme}: scheme`;
  return undefined;
}

/**
 * True when `given` (an authorization or token request's redirect_uri) is `registered`: the same string, or for a
 * loopback `http` URI the same but for its port, which a native app picks when it starts listening.
 */
export function redirectMatches(registered: string, given: string): boolean {
  if (registered === given) return true;
  const [a, b] = [parsed(registered), parsed(given)];
  if (!a || !b || !loopbackHttp(a) || !loopbackHttp(b) || given.includes("#")) return false;
  return a.hostname === b.hostname && a.pathname === b.pathname && a.search === b.search;
}

/** A PKCE code verifier as RFC 7636 (section 4.1) defines it: 43 to 128 unreserved characters. */
export const VERIFIER_SHAPE = /^[A-Za-z0-9._~-]{43,128}$/;
/** An S256 code challenge: base64url of a SHA-256 digest, 43 characters. */
export const CHALLENGE_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** base64url(SHA-256(verifier)): the S256 challenge of a verifier (RFC 7636, section 4.2). */
export async function s256(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return digest.toBase64({ alphabet: "base64url", omitPadding: true });
}

/** True when `verifier` is a well-formed verifier whose S256 challenge is `challenge`. */
export async function verifierMatches(verifier: string | null, challenge: string): Promise<boolean> {
  return verifier !== null && VERIFIER_SHAPE.test(verifier) && await s256(verifier) === challenge;
}

/**
 * The base URL the authorization server is served under, as the client reached the gateway (through trusted proxies
 * as they say), or undefined over plain http beyond loopback: OAuth's secrets never cross a network unencrypted.
 */
export function oauthBase(peer: Pick<Peer, "https" | "authority" | "hostname">): string | undefined {
  if (!peer.https && !isLoopback(peer.hostname)) return undefined;
  return `${peer.https ? "https" : "http"}://${peer.authority}`;
}

/** The resource a token of this gateway is for: its /mcp as the client reached it (RFC 8707, RFC 9728). */
export function mcpResource(base: string): string {
  return `${base}/mcp`;
}

/**
 * True when a request's `resource` names `expected`: the same URL once parsed (scheme and host in any case, the
 * default port written or not), and nothing else: another path, a trailing slash, a query or a fragment is another
 * resource.
 */
export function sameResource(given: string, expected: string): boolean {
  const url = parsed(given);
  return url !== undefined && !given.includes("#") && url.href === new URL(expected).href;
}

/** True for a host that is this machine, a private network's or a link's own: none of them is a client's site. */
function internalHost(hostname: string): boolean {
  const name = hostname.replace(/^\[|\]$/g, "");
  if (isLoopback(name) || name.endsWith(".local") || name.endsWith(".internal")) return true;
  const bytes = parseIp(name);
  if (!bytes) return !name.includes(".");
  if (bytes.length === 4) {
    const [a, b] = bytes;
    return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b < 32) ||
      (a === 192 && b === 168) || (a === 100 && b >= 64 && b < 128);
  }
  return (bytes[0] & 0xfe) === 0xfc || (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) || bytes.every((b) => !b);
}

/**
 * Why `clientId` is not a client id metadata document's URL the gateway will fetch, or undefined when it is: `https`,
 * with a path, without a fragment or credentials, on a public host name (never this machine or a private network, so
 * a client id cannot make the gateway call inside its own network).
 */
export function clientIdUrlProblem(clientId: string): string | undefined {
  if (clientId.length > MAX_URI_LENGTH) return `is longer than ${MAX_URI_LENGTH} characters`;
  const url = parsed(clientId);
  if (!url || url.protocol !== "https:") return "must be an https URL";
  if (url.pathname === "/" || url.pathname === "") return "must have a path";
  if (url.hash !== "" || clientId.includes("#")) return "must not have a fragment";
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  if (internalHost(url.hostname)) return "must be on a public host, not this machine or a private network";
  return undefined;
}

/** True when a client id is a URL (a metadata document's, fit or not) rather than a registration of the gateway's. */
export function isUrlClientId(clientId: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(clientId);
}

/** The prefixes of the secrets the gateway hands out: never `sk-`, so no token is taken for another. */
export const SECRET_PREFIX = { access: "mga_", refresh: "mgr_", code: "mgc_" } as const;

/** A new random secret of a kind: its prefix, then 32 random bytes in base64url. */
export function newSecret(kind: keyof typeof SECRET_PREFIX): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `${SECRET_PREFIX[kind]}${bytes.toBase64({ alphabet: "base64url", omitPadding: true })}`;
}

/**
 * A new access token of a grant: the prefix, the grant's id (so one KV read finds the token and its grant together),
 * a dot, and 32 random bytes.
 */
export function newAccessToken(grantId: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `${SECRET_PREFIX.access}${grantId}.${bytes.toBase64({ alphabet: "base64url", omitPadding: true })}`;
}

/** A grant's id: `oag_` and 16 hex digits. */
export const GRANT_ID = /^oag_[0-9a-f]{16}$/;

/** The grant an access token names, or undefined when it has no access token's shape. */
export function grantIdOf(token: string): string | undefined {
  if (!token.startsWith(SECRET_PREFIX.access)) return undefined;
  const [id, secret] = token.slice(SECRET_PREFIX.access.length).split(".", 2);
  return GRANT_ID.test(id) && /^[A-Za-z0-9_-]{43}$/.test(secret ?? "") ? id : undefined;
}

/** True when `credential` has the prefix of the gateway's OAuth access tokens (well-formed or not). */
export function isAccessToken(credential: string): boolean {
  return credential.startsWith(SECRET_PREFIX.access);
}

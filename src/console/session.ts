/**
 * @module Console sessions: a random id in an HttpOnly, SameSite=Strict cookie, kept in KV under an HMAC of the id
 * keyed by the admin key. Signing out deletes the entry on every instance, and changing the admin key ends every
 * session at once: the same cookie then points at a key nobody wrote. The admin key itself is never stored.
 */
import type { Peer } from "../core/peer.ts";

/** The cookie's name. */
const SESSION_COOKIE = "modelgate_console";
/** How long a sign-in lasts. */
const SESSION_MS = 12 * 3_600_000;

const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const encoder = new TextEncoder();

/** Where one session is kept: its id, MACed with the admin key, so a key change orphans it. */
async function sessionKey(adminKey: string, id: string): Promise<Deno.KvKey> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(adminKey), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(`modelgate console session ${id}`)));
  return ["console_session", mac.toHex()];
}

/** The session id the request's cookie carries, when it has the shape of one. */
export function sessionIdOf(req: Request): string | undefined {
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const [name, value] = part.trim().split("=", 2);
    if (name === SESSION_COOKIE && value !== undefined && ID_SHAPE.test(value)) return value;
  }
  return undefined;
}

/** Starts a session; answers its id and when it ends. */
export async function startSession(kv: Deno.Kv, adminKey: string, now: Date): Promise<{ id: string; expires: Date }> {
  const id = crypto.getRandomValues(new Uint8Array(32)).toBase64({ alphabet: "base64url", omitPadding: true });
  const expires = new Date(now.getTime() + SESSION_MS);
  await kv.set(await sessionKey(adminKey, id), { expires_at: expires.getTime() }, { expireIn: SESSION_MS });
  return { id, expires };
}

/** True when the request carries a live session made under this admin key. */
export async function hasSession(kv: Deno.Kv, adminKey: string, req: Request, now: Date): Promise<boolean> {
  const id = sessionIdOf(req);
  if (!id) return false;
  // KV lets an expired entry linger a while; its own expiry is what counts.
  const entry = await kv.get<{ expires_at: number }>(await sessionKey(adminKey, id));
  return entry.value !== null && entry.value.expires_at > now.getTime();
}

/** Ends the request's session, if it has one. */
export async function endSession(kv: Deno.Kv, adminKey: string, req: Request): Promise<void> {
  const id = sessionIdOf(req);
  if (id) await kv.delete(await sessionKey(adminKey, id));
}

/**
 * The Set-Cookie value for a session, or one that removes it when `session` is undefined; `https` (the request came
 * over HTTPS, itself or as a trusted proxy says) makes it Secure.
 */
export function sessionCookie(session: { id: string; expires: Date } | undefined, https: boolean): string {
  const value = session
    ? `${session.id}; Max-Age=${SESSION_MS / 1000}; Expires=${session.expires.toUTCString()}`
    : "; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT";
  return `${SESSION_COOKIE}=${value}; Path=/ui; HttpOnly; SameSite=Strict${https ? "; Secure" : ""}`;
}

/**
 * True when a state-changing request comes from the console's own pages: its Origin's host is exactly the one the
 * request was sent to (`peer.authority`: the Host, or a trusted proxy's X-Forwarded-Host). A form on another site,
 * or a request with no Origin, is refused.
 */
export function sameOrigin(req: Request, peer: Pick<Peer, "authority">): boolean {
  const origin = req.headers.get("origin");
  if (!origin || origin === "null") return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  return host === peer.authority;
}

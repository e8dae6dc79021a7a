/**
 * @module Console sessions: a random id in an HttpOnly, SameSite=Strict cookie (`__Host-` and Secure over https), kept in
 * KV under an HMAC of the id keyed by the admin key, ending at an absolute and an idle lifetime. A session is the admin
 * key's (owner) or a person's (their email, role and token groups); a person's cookie also names their role override
 * (src/access/people.ts) so each page reads both at once, and a role changed or removed there counts at the next page
 * on every instance. Signing out deletes the entry on every instance, and changing the admin key ends every session at
 * once: the same cookie then points at a key nobody wrote. The admin key itself is never stored.
 */
import { overrideKey, personTag, type RoleOverride } from "../access/people.ts";
import type { PersonRole } from "../access/roles.ts";
import type { Peer } from "../core/peer.ts";

/** The cookie's name over http, where the browser keeps it for /ui only. */
const SESSION_COOKIE = "modelgate_console";
/**
 * Its name over https: the `__Host-` prefix makes the browser refuse it unless it is Secure, for the whole host (Path=/)
 * and set by this host alone, so a sibling domain cannot plant a session of its own choosing.
 */
const HOST_COOKIE = "__Host-modelgate_console";

/** A session id, then for a person's session a dot and their tag. */
const VALUE_SHAPE = /^([A-Za-z0-9_-]{43})(?:\.([A-Za-z0-9_-]{43}))?$/;
const encoder = new TextEncoder();

/** How long sessions last: `maxMs` after signing in at most, `idleMs` after the last page at most. */
export interface SessionLimits {
  maxMs: number;
  idleMs: number;
}

/** The person a session is for, and what they may do. */
export interface SessionPerson {
  email: string;
  role: PersonRole;
  token_groups: string[];
}

/** A live session: the admin key's when `person` is undefined. */
export interface Session {
  person?: SessionPerson;
}

/** A session as kept in KV. */
interface SessionEntry {
  expires_at: number;
  /** When a page was last opened with it, to a fraction of the idle lifetime (see {@linkcode readSession}). */
  seen_at: number;
  /** The person and their grant as it was at sign-in; an override in KV beats it. */
  person?: SessionPerson;
}

/** Where one session is kept: its id, MACed with the admin key, so a key change orphans it. */
async function sessionKey(adminKey: string, id: string): Promise<Deno.KvKey> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(adminKey), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(`modelgate console session ${id}`)));
  return ["console_session", mac.toHex()];
}

/** The session id and person tag the request's cookie carries, when it has their shape; over https only `__Host-`. */
function sessionOf(req: Request, https: boolean): { id: string; tag?: string } | undefined {
  const wanted = https ? HOST_COOKIE : SESSION_COOKIE;
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const [name, value] = part.trim().split("=", 2);
    const match = name === wanted && value !== undefined ? VALUE_SHAPE.exec(value) : null;
    if (match) return { id: match[1], tag: match[2] };
  }
  return undefined;
}

/** The session id the request's cookie carries, when it has the shape of one; over https only the `__Host-` cookie. */
export function sessionIdOf(req: Request, https: boolean): string | undefined {
  return sessionOf(req, https)?.id;
}

/** KV drops an entry once neither lifetime can keep it. */
function expireIn(entry: SessionEntry, limits: SessionLimits): number {
  return Math.max(1, Math.min(entry.expires_at, entry.seen_at + limits.idleMs) - entry.seen_at);
}

/** A started session: the cookie's value (the session id, and for a person their tag) and its latest end. */
export interface StartedSession {
  id: string;
  expires: Date;
}

/**
 * Starts a session, the admin key's or `person`'s. With `check`, only while that entry (the person's override as read
 * before) is unchanged in KV; answers undefined when it changed meanwhile.
 */
export async function startSession(
  kv: Deno.Kv,
  adminKey: string,
  options: SessionLimits & { now: Date; person?: SessionPerson; check: Deno.AtomicCheck },
): Promise<StartedSession | undefined>;
export async function startSession(
  kv: Deno.Kv,
  adminKey: string,
  options: SessionLimits & { now: Date; person?: SessionPerson },
): Promise<StartedSession>;
export async function startSession(
  kv: Deno.Kv,
  adminKey: string,
  options: SessionLimits & { now: Date; person?: SessionPerson; check?: Deno.AtomicCheck },
): Promise<StartedSession | undefined> {
  const id = crypto.getRandomValues(new Uint8Array(32)).toBase64({ alphabet: "base64url", omitPadding: true });
  const at = options.now.getTime();
  const person = options.person && { ...options.person, email: options.person.email.toLowerCase() };
  const entry: SessionEntry = { expires_at: at + options.maxMs, seen_at: at, ...person ? { person } : {} };
  const write = kv.atomic();
  if (options.check) write.check(options.check);
  const { ok } = await write.set(await sessionKey(adminKey, id), entry, { expireIn: expireIn(entry, options) })
    .commit();
  if (!ok) return undefined;
  return { id: person ? `${id}.${await personTag(person.email)}` : id, expires: new Date(entry.expires_at) };
}

/**
 * The live session the request carries, made under this admin key: within its absolute lifetime, and opened within the
 * idle lifetime; a person's with the role an override in KV gives them (none: no session), read with the session in
 * one go. Each use moves the idle deadline on, written at most once per tenth of the idle lifetime (a minute at most)
 * so pages do not write KV each time; the session may so end up to that much early, never late.
 */
export async function readSession(
  kv: Deno.Kv,
  adminKey: string,
  req: Request,
  options: SessionLimits & { now: Date; https: boolean },
): Promise<Session | undefined> {
  const cookie = sessionOf(req, options.https);
  if (!cookie) return undefined;
  const key = await sessionKey(adminKey, cookie.id);
  // KV lets an expired entry linger a while; its own deadlines are what count.
  const [entry, override] = cookie.tag
    ? await kv.getMany<[SessionEntry, RoleOverride]>([key, overrideKey(cookie.tag)])
    : [await kv.get<SessionEntry>(key), undefined];
  const now = options.now.getTime();
  if (!entry.value || entry.value.expires_at <= now || entry.value.seen_at + options.idleMs <= now) return undefined;
  const person = await effectivePerson(entry.value.person, cookie.tag, override?.value ?? null);
  if (person === null) return undefined;
  if (now - entry.value.seen_at >= Math.min(60_000, options.idleMs / 10)) {
    const seen = { ...entry.value, seen_at: now };
    // A session signed out meanwhile stays out: the write is checked against the entry read. A write the KV refuses
    // (busy, say) leaves the old idle deadline, which only ends the session early, so the page is served anyway.
    await kv.atomic().check(entry).set(key, seen, { expireIn: expireIn(seen, options) }).commit().catch(() => {});
  }
  return person ? { person } : {};
}

/**
 * Who a session acts as: undefined for the admin key's, null when it may not go on (a person whose cookie names
 * another's tag, or whose role was removed), else the person with the role their override gives, or their sign-in's.
 */
async function effectivePerson(
  person: SessionPerson | undefined,
  tag: string | undefined,
  override: RoleOverride | null,
): Promise<SessionPerson | undefined | null> {
  if (!person) return tag === undefined ? undefined : null;
  // The tag picks which override is read, so it must be this person's own, or a cookie could borrow another's role.
  if (tag !== await personTag(person.email)) return null;
  if (!override) return person;
  if (override.role === null) return null;
  return { email: person.email, role: override.role, token_groups: override.token_groups };
}

/** Ends the request's session, if it has one. */
export async function endSession(kv: Deno.Kv, adminKey: string, req: Request, https: boolean): Promise<void> {
  const id = sessionOf(req, https)?.id;
  if (id) await kv.delete(await sessionKey(adminKey, id));
}

/**
 * The Set-Cookie value for a session, or one that removes it when `session` is undefined. Over `https` (the request
 * came over HTTPS, itself or as a trusted proxy says) it is the `__Host-` cookie, Secure, for Path=/ (the prefix
 * demands both), else a cookie for /ui.
 */
export function sessionCookie(session: { id: string; expires: Date; now: Date } | undefined, https: boolean): string {
  const value = session
    ? `${session.id}; Max-Age=${
      Math.round((session.expires.getTime() - session.now.getTime()) / 1000)
    }; Expires=${session.expires.toUTCString()}`
    : "; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT";
  const scope = https ? "Path=/; HttpOnly; SameSite=Strict; Secure" : "Path=/ui; HttpOnly; SameSite=Strict";
  return `${https ? HOST_COOKIE : SESSION_COOKIE}=${value}; ${scope}`;
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

/**
 * @module Clients' MCP sessions in KV, so a session goes on whichever instance or worker its next request reaches: the
 * token it belongs to, the protocol version agreed, and the session opened with each server (lazily, at its first
 * call). Key ["mcp_session", id]; it expires `session_idle_ms` after its last use (kept fresh at most once a minute),
 * and an instance reuses a record it read for two seconds.
 */
import { type KvWriter, RETRY } from "../core/kv_write.ts";

/** A session the gateway opened with one HTTP server for a client session. */
export interface UpstreamRef {
  /** The server's session id; absent for a server that keeps no sessions. */
  id?: string;
  version: string;
}

/** One client's session. */
export interface ClientSession {
  id: string;
  token_id: string;
  /** The protocol version agreed at initialize. */
  version: string;
  created_at: number;
  /** When the record's expiry was last pushed back. */
  touched_at: number;
  /** Per server name, the session opened there for this client. */
  upstream: Record<string, UpstreamRef>;
}

/** Where sessions are kept. */
export interface SessionStore {
  create(tokenId: string, version: string): Promise<ClientSession>;
  /** The session, or null when there is none (never was, ended, or expired). */
  get(id: string): Promise<ClientSession | null>;
  /**
   * Records `ref` as the session's own with `server`, unless another request recorded one first: the one in force is
   * returned. `replacing` names a ref known to be gone, which the new one may take the place of.
   */
  setUpstream(id: string, server: string, ref: UpstreamRef, replacing?: UpstreamRef): Promise<UpstreamRef | null>;
  /** Ends the session; the record it had, or null. */
  delete(id: string): Promise<ClientSession | null>;
}

/** What a session id looks like: 32 random bytes in base64url. Anything else is no session of the gateway's. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const key = (id: string): Deno.KvKey => ["mcp_session", id];

/** How long an instance answers from the record it read last: a session's calls then cost no KV read each. */
const CACHE_MS = 2000;

/** Records kept at most in the cache; it starts over when full, which only costs reads. */
const CACHE_ENTRIES = 10_000;

/**
 * Sessions over `kv`. A record read is reused for {@linkcode CACHE_MS}: a session ended on another instance goes on here
 * that much longer at most, and a session's server sessions opened elsewhere meanwhile are found when this instance
 * records its own (see {@linkcode SessionStore.setUpstream}).
 */
export function sessionStore(
  kv: Deno.Kv,
  options: { idleMs: number; now(): number; writes: KvWriter },
): SessionStore {
  const expireIn = options.idleMs;
  const cache = new Map<string, { session: ClientSession; until: number }>();
  const remember = (session: ClientSession) => {
    if (cache.size >= CACHE_ENTRIES) cache.clear();
    cache.set(session.id, { session, until: options.now() + CACHE_MS });
    return session;
  };
  // Pushing the expiry back costs a write; once a minute (or a tenth of the idle time, if shorter) is plenty.
  const touchEvery = Math.min(60_000, Math.floor(expireIn / 10));
  return {
    async create(tokenId, version) {
      const now = options.now();
      const session: ClientSession = {
        id: newSessionId(),
        token_id: tokenId,
        version,
        created_at: now,
        touched_at: now,
        upstream: {},
      };
      await options.writes.write("mcp_session", async () => {
        const done = await kv.atomic().check({ key: key(session.id), versionstamp: null })
          .set(key(session.id), session, { expireIn }).commit();
        return done.ok ? true : RETRY;
      });
      return remember(session);
    },
    async get(id) {
      if (!SESSION_ID.test(id)) return null;
      const cached = cache.get(id);
      if (cached && cached.until > options.now()) return cached.session;
      const entry = await kv.get<ClientSession>(key(id));
      const session = entry.value;
      if (!session) {
        cache.delete(id);
        return null;
      }
      const now = options.now();
      if (now - session.touched_at >= touchEvery) {
        const touched = { ...session, touched_at: now };
        // Best effort: a change made meanwhile elsewhere wins, and pushes the expiry back itself.
        await kv.atomic().check(entry).set(key(id), touched, { expireIn }).commit().catch(() => {});
        return remember(touched);
      }
      return remember(session);
    },
    setUpstream(id, server, ref, replacing) {
      return options.writes.write("mcp_session", async () => {
        const entry = await kv.get<ClientSession>(key(id));
        const session = entry.value;
        if (!session) return null;
        const current = session.upstream[server];
        if (current && !(replacing && current.id === replacing.id)) return current;
        const next = { ...session, touched_at: options.now(), upstream: { ...session.upstream, [server]: ref } };
        const done = await kv.atomic().check(entry).set(key(id), next, { expireIn }).commit();
        if (!done.ok) return RETRY;
        remember(next);
        return ref;
      });
    },
    async delete(id) {
      if (!SESSION_ID.test(id)) return null;
      cache.delete(id);
      return await options.writes.write("mcp_session", async () => {
        const entry = await kv.get<ClientSession>(key(id));
        if (!entry.value) return null;
        const done = await kv.atomic().check(entry).delete(key(id)).commit();
        return done.ok ? entry.value : RETRY;
      });
    },
  };
}

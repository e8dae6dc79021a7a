/**
 * @module Clients' MCP sessions in KV, so a session goes on whichever instance or worker its next request reaches: the
 * token it belongs to, the protocol version agreed, and the session opened with each server (lazily, at its first
 * call). A session ends `session_idle_ms` after its last use (kept fresh at most once a minute), a token keeps at most
 * `max_sessions_per_token` (the oldest ends), and an instance reuses a record it read for two seconds. The keys are in
 * ./session_keys.ts.
 */
import { type KvWriter, RETRY } from "../core/kv_write.ts";
import { byToken, change, type ClientSession, DUE, openings, record, type UpstreamRef } from "./session_keys.ts";

export type { ClientSession, UpstreamRef } from "./session_keys.ts";

/** A session ended without the client: its id, and the sessions it had opened with servers, to be ended there. */
export type EndedSession = Pick<ClientSession, "id" | "upstream">;

/** Where sessions are kept. */
export interface SessionStore {
  /** Opens a session for the token; `evicted` are its oldest, ended to keep it within its bound. */
  create(tokenId: string, version: string): Promise<{ session: ClientSession; evicted: EndedSession[] }>;
  /** The session, or null when there is none (never was, ended, or expired). */
  get(id: string): Promise<ClientSession | null>;
  /**
   * Records `ref` as the session's own with `server`, unless another request recorded one first: the one in force is
   * returned. `replacing` names a ref known to be gone, which the new one may take the place of.
   */
  setUpstream(id: string, server: string, ref: UpstreamRef, replacing?: UpstreamRef): Promise<UpstreamRef | null>;
  /** Ends the session; the record it had, or null. */
  delete(id: string): Promise<ClientSession | null>;
  /**
   * The sessions that expired with sessions open on servers, at most `limit` of them, each taken once across every
   * instance on the KV: their servers' sessions are the caller's to end.
   */
  expired(limit: number): Promise<EndedSession[]>;
}

/** What a session id looks like: 32 random bytes in base64url. Anything else is no session of the gateway's. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** How long an instance answers from the record it read last: a session's calls then cost no KV read each. */
const CACHE_MS = 2000;

/** Records kept at most in the cache; it starts over when full, which only costs reads. */
const CACHE_ENTRIES = 10_000;

/** Options of {@linkcode sessionStore}. */
export interface SessionStoreOptions {
  idleMs: number;
  /** The most sessions a token keeps open. */
  maxPerToken: number;
  now(): number;
  writes: KvWriter;
}

/**
 * Sessions over `kv`. A record read is reused for {@linkcode CACHE_MS}: a session ended on another instance goes on here
 * that much longer at most, and a session's server sessions opened elsewhere meanwhile are found when this instance
 * records its own (see {@linkcode SessionStore.setUpstream}).
 */
export function sessionStore(kv: Deno.Kv, options: SessionStoreOptions): SessionStore {
  const idleMs = options.idleMs;
  const cache = new Map<string, { session: ClientSession; until: number }>();
  const remember = (session: ClientSession) => {
    if (cache.size >= CACHE_ENTRIES) cache.clear();
    cache.set(session.id, { session, until: options.now() + CACHE_MS });
    return session;
  };
  // The clock decides, not KV's expiry (which removes a key some time after it is due).
  const live = (session: ClientSession, now: number) => now - session.touched_at < idleMs;
  // Pushing the expiry back costs a write; once a minute (or a tenth of the idle time, if shorter) is plenty.
  const touchEvery = Math.min(60_000, Math.floor(idleMs / 10));

  /** Reads the token's open sessions and ends those past its bound (or gone by the clock) in `op`. */
  async function makeRoom(tokenId: string, now: number, op: Deno.AtomicOperation): Promise<EndedSession[]> {
    const open: Deno.KvEntry<number>[] = [];
    for await (const entry of kv.list<number>({ prefix: byToken(tokenId) })) {
      if (now - entry.value < idleMs) open.push(entry);
      else op.delete(entry.key); // Expired: the sweep ends its servers' sessions (./session_keys.ts, DUE).
    }
    const over = open.slice(0, Math.max(0, open.length - options.maxPerToken + 1));
    const entries = await Promise.all(over.map((entry) => kv.get<ClientSession>(record(String(entry.key[3])))));
    const evicted: EndedSession[] = [];
    for (const [i, entry] of entries.entries()) {
      op.check(entry).delete(over[i].key);
      if (!entry.value) continue;
      change(op, entry.value, null, idleMs);
      evicted.push({ id: entry.value.id, upstream: entry.value.upstream });
    }
    return evicted;
  }

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
      const evicted = await options.writes.write("mcp_session", async () => {
        // Every opening bumps the token's count, so two at once cannot both keep the token within its bound.
        const count = await kv.get<number>(openings(tokenId));
        const op = kv.atomic().check(count).check({ key: record(session.id), versionstamp: null })
          .set(openings(tokenId), (count.value ?? 0) + 1, { expireIn: idleMs });
        const ended = await makeRoom(tokenId, now, op);
        change(op, null, session, idleMs);
        return (await op.commit()).ok ? ended : RETRY;
      });
      for (const ended of evicted) cache.delete(ended.id);
      return { session: remember(session), evicted };
    },
    async get(id) {
      if (!SESSION_ID.test(id)) return null;
      const now = options.now();
      const cached = cache.get(id);
      if (cached && cached.until > now) return live(cached.session, now) ? cached.session : null;
      const entry = await kv.get<ClientSession>(record(id));
      const session = entry.value;
      if (!session || !live(session, now)) {
        cache.delete(id);
        return null;
      }
      if (now - session.touched_at >= touchEvery) {
        const touched = { ...session, touched_at: now };
        // Best effort: a change made meanwhile elsewhere wins, and pushes the expiry back itself.
        await change(kv.atomic().check(entry), session, touched, idleMs).commit().catch(() => {});
        return remember(touched);
      }
      return remember(session);
    },
    setUpstream(id, server, ref, replacing) {
      return options.writes.write("mcp_session", async () => {
        const entry = await kv.get<ClientSession>(record(id));
        const session = entry.value;
        if (!session) return null;
        const current = session.upstream[server];
        if (current && !(replacing && current.id === replacing.id)) return current;
        const next = { ...session, touched_at: options.now(), upstream: { ...session.upstream, [server]: ref } };
        if (!(await change(kv.atomic().check(entry), session, next, idleMs).commit()).ok) return RETRY;
        remember(next);
        return ref;
      });
    },
    async delete(id) {
      if (!SESSION_ID.test(id)) return null;
      cache.delete(id);
      return await options.writes.write("mcp_session", async () => {
        const entry = await kv.get<ClientSession>(record(id));
        if (!entry.value) return null;
        const done = await change(kv.atomic().check(entry), entry.value, null, idleMs).commit();
        return done.ok ? entry.value : RETRY;
      });
    },
    async expired(limit) {
      const ended: EndedSession[] = [];
      const now = options.now();
      for await (const entry of kv.list<EndedSession["upstream"]>({ start: [DUE], end: [DUE, now] }, { limit })) {
        const id = String(entry.key[2]);
        const current = await kv.get<ClientSession>(record(id));
        const op = kv.atomic().check(entry).check(current).delete(entry.key);
        // A session in use moves its due entry on with it, so one still live here is a leftover, only removed.
        const inUse = current.value !== null && live(current.value, now);
        if (current.value && !inUse) change(op, current.value, null, idleMs);
        if ((await op.commit()).ok && !inUse) ended.push({ id, upstream: entry.value });
      }
      for (const session of ended) cache.delete(session.id);
      return ended;
    },
  };
}

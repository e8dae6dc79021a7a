/**
 * @module A per-instance cache of tokens, their groups and their owners' standing in front of KV, so a known token
 * costs no KV read.
 * Every token or group write bumps one version key in the same atomic commit; each instance polls that key
 * (one small read per interval, not per request) and drops its cache when it moves, so a change made by any
 * process sharing the KV takes effect everywhere within the interval. Writes through this process's own store
 * drop the cache at once.
 */
import type { Credentials, OwnerJudge, Resolved } from "./auth.ts";
import { hashToken, storeCredentials } from "./auth.ts";
import { AUTH_VERSION_KEY, type Store } from "./store.ts";

/** A cached credential lookup that must be closed. */
export interface CachedCredentials extends Credentials {
  /** Resolves once a check of the version key that began after this call has completed. */
  refreshed(): Promise<void>;
  /** Stops polling and waits for a check in flight. */
  close(): Promise<void>;
}

/** Options for {@linkcode cachedCredentials}. */
export interface CacheOptions {
  /** Interval between checks of the version key. */
  refreshMs: number;
  /** Entries kept at most; the cache starts over when it is full, which only costs reads. */
  maxEntries?: number;
  log?(line: Record<string, unknown>): void;
  /** Judges tokens that name an owner by the owner's role; the auth version moves with every such role change. */
  judge?: OwnerJudge;
}

/** Wraps the store's token lookups in a cache invalidated by the version key. */
export function cachedCredentials(store: Store, options: CacheOptions): CachedCredentials {
  const source = storeCredentials(store, options.judge);
  const maxEntries = options.maxEntries ?? 10_000;
  const byHash = new Map<string, Resolved>();
  // A secret seen before skips its SHA-256, the largest cost of a cached lookup.
  const bySecret = new Map<string, Resolved>();
  // Bumped on every invalidation, so a lookup that started before one does not refill the cache with stale data.
  let generation = 0;
  let seen: string | undefined;
  let closed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<void> | undefined;
  let waiters: (() => void)[] = [];

  function invalidate(): void {
    generation++;
    byHash.clear();
    bySecret.clear();
  }
  const unsubscribe = store.onChange(invalidate);

  async function check(): Promise<void> {
    // Only callers that asked before this read began are told it happened.
    const done = waiters;
    waiters = [];
    try {
      const entry = await store.kv.get(AUTH_VERSION_KEY);
      const version = entry.versionstamp ?? "none";
      if (version !== seen) {
        seen = version;
        invalidate();
      }
    } catch (err) {
      options.log?.({ event: "auth_cache_refresh_failed", error: String((err as Error)?.name) });
      invalidate();
    }
    for (const resolve of done) resolve();
  }
  function schedule(): void {
    if (closed) return;
    timer = setTimeout(() => {
      inFlight = check().finally(() => {
        inFlight = undefined;
        schedule();
      });
    }, options.refreshMs);
  }
  inFlight = check().finally(() => {
    inFlight = undefined;
    schedule();
  });

  /** Looks `key` up in `map`, else reads it and keeps it unless the cache was dropped meanwhile. */
  async function cached(
    map: Map<string, Resolved>,
    key: string,
    read: () => Promise<Resolved | null>,
  ): Promise<Resolved | null> {
    const hit = map.get(key);
    if (hit) return hit;
    const startedAt = generation;
    const found = await read();
    if (found && startedAt === generation) {
      if (byHash.size + bySecret.size >= maxEntries) invalidate();
      map.set(key, found);
    }
    return found;
  }
  const byHashCached = (hash: string) => cached(byHash, hash, () => source.byHash(hash));

  return {
    byHash: byHashCached,
    bySecret: (secret) => cached(bySecret, secret, async () => byHashCached(await hashToken(secret))),
    refreshed: () => new Promise((resolve) => waiters.push(resolve)),
    async close() {
      closed = true;
      clearTimeout(timer);
      unsubscribe();
      await inFlight;
      for (const resolve of waiters) resolve();
    },
  };
}

/** @module Unit tests of the token cache: a lookup under way when a token changes never caches what it read. */
import assert from "node:assert/strict";
import { hashToken } from "../../src/access/auth.ts";
import { type CachedCredentials, cachedCredentials } from "../../src/access/auth_cache.ts";
import { AUTH_VERSION_KEY, createStore } from "../../src/access/store.ts";

/**
 * Holds the answer of the next read of a token record (once armed) until released, as a slow KV would: the read is
 * made at once, so what it returns is the record as it stood then. `kv` is changed in place.
 */
function holdTokenRead(kv: Deno.Kv) {
  const get = kv.get.bind(kv);
  const versionRead = Promise.withResolvers<void>();
  let held: { reached: PromiseWithResolvers<void>; release: PromiseWithResolvers<void> } | undefined;
  kv.get = (async (key: Deno.KvKey, options?: { consistency?: Deno.KvConsistencyLevel }) => {
    const entry = await get(key, options);
    if (key[0] === AUTH_VERSION_KEY[0]) versionRead.resolve();
    if (held && key[0] === "token_hash") {
      const { reached, release } = held;
      held = undefined;
      reached.resolve();
      await release.promise;
    }
    return entry;
  }) as Deno.Kv["get"];
  return {
    /** Resolves once the cache's first check of the version key has read it. */
    versionRead: versionRead.promise,
    /** Holds the next token read; the promise resolves when that read has been made. */
    arm(): { reached: Promise<void>; release(): void } {
      const next = { reached: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() };
      held = next;
      return { reached: next.reached.promise, release: () => next.release.resolve() };
    },
  };
}

/** Both ways the gateway looks a token up: by its secret (skipping the hash when seen before), and by its hash. */
const LOOKUPS = [
  { name: "bySecret", find: (cache: CachedCredentials, secret: string) => cache.bySecret!(secret) },
  { name: "byHash", find: async (cache: CachedCredentials, secret: string) => cache.byHash(await hashToken(secret)) },
];

for (const lookup of LOOKUPS) {
  Deno.test(`cachedCredentials().${lookup.name}() never caches a token revoked while it was being read`, async () => {
    const kv = await Deno.openKv(":memory:");
    const store = createStore(kv);
    const hold = holdTokenRead(kv);
    // A long interval: only the revocation itself may drop the cache during the test, never a poll.
    const cache = cachedCredentials(store, { refreshMs: 60_000 });
    try {
      await store.putGroup({ name: "default", listing: "anthropic", models: ["m"] });
      const { secret, record } = await store.createToken({ group: "default" });
      await hold.versionRead;
      const read = hold.arm();
      const inFlight = lookup.find(cache, secret);
      await read.reached;
      await store.revokeToken(record.id);
      read.release();
      // The lookup read the record before the revocation landed: that one answer may still see it live.
      assert.equal((await inFlight)?.token.disabled, false);
      const after = await lookup.find(cache, secret);
      assert.equal(after?.token.disabled, true, "the revoked token was put back into the cache by the earlier lookup");
    } finally {
      await cache.close();
      store.close();
    }
  });
}

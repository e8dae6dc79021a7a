/**
 * @module The KV side of leased limit shares: the checked commit that claims a grant for a share, the `sum` commits
 * that write the debts real usage ran up past the shares, and the give-back of a share's unused part. Each works on
 * the share's local state (what it holds, the counter's entry as last seen) and counts its KV work for the metrics.
 */
import { type KvWriter, RETRY } from "../core/kv_write.ts";
import { commitAll } from "../usage/commits.ts";
import { type Counter, counterValue, expireIn, grantOf, maxOf, type ShareSettings, wanted } from "./share_size.ts";

/** Counts of the KV work the shares did, for the metrics. */
export interface ShareStats {
  claims: number;
  returns: number;
  flushes: number;
  conflicts: number;
}

/** The local state of one counter's share. */
export interface Share {
  counter: Counter;
  /** What this instance may still admit; negative when real usage outran it (a debt to add to KV). */
  left: bigint;
  /** The counter's KV entry as this instance last wrote or read it, so a claim can commit without reading. */
  seen?: { value: bigint; versionstamp: string };
  claiming?: Promise<void>;
  /** Demand of requests waiting for the claim in flight, for the next one's size. */
  waiting: bigint;
  /** When the share is given back unless topped up. */
  expiresAt: number;
  /** After a refusal: until when requests are refused from memory, what KV held, and the limit it was refused at. */
  refusedUntil: number;
  refusedUsed: bigint;
  refusedLimit: bigint;
  /** Taken since the last claim, and when that claim was made: the recent rate. */
  taken: bigint;
  claimedAt: number;
  lastGrant: bigint;
  /** A debt was added with `sum`, which leaves the counter's expiry unknown: the next give-back sets it again. */
  summed: boolean;
}

/** What the KV side works with. */
export interface ShareKvOptions {
  now(): number;
  writes: KvWriter;
  settings: ShareSettings;
  /** Counted into as the work is done. */
  stats: ShareStats;
}

/** The KV operations on one instance's shares. */
export interface ShareKv {
  /**
   * One checked commit that adds a grant to the counter, enough for a request of `first` with what the share holds
   * (see share_size.ts); `background` for a top-up before the share runs out. It commits on the entry last seen and
   * reads only when that is stale.
   */
  claim(share: Share, first: bigint, background: boolean): Promise<void>;
  /**
   * Adds every debt to KV with `sum` mutations, which need no read, in as few commits as KV allows. A debt that could
   * not be written is kept for the next sweep; one KV refuses on its own (a counter still holding a value from before
   * shares) is dropped, so it cannot hold back the others.
   */
  flushDebts(shares: Iterable<Share>): Promise<void>;
  /** Gives a share's unused part back to KV, never taking the counter below zero. */
  giveBack(share: Share): Promise<void>;
}

/** The KV side of the shares over `kv`. */
export function shareKv(kv: Deno.Kv, options: ShareKvOptions): ShareKv {
  const { settings, stats } = options;

  async function claim(share: Share, first: bigint, background: boolean): Promise<void> {
    const { counter } = share;
    const needed = maxOf(first, share.waiting);
    share.waiting = 0n;
    const now = options.now();
    const want = wanted(needed, share.taken, share.claimedAt, now, settings.horizonMs);
    await options.writes.write(background ? "limit_refresh" : "limit_claim", async () => {
      if (!share.seen) {
        const entry = await kv.get(counter.key);
        share.seen = { value: counterValue(entry.value), versionstamp: entry.versionstamp ?? "" };
      }
      const { value, versionstamp } = share.seen;
      // What the next request lacks is decided now (settled usage may have changed it while this claim waited); a
      // refresh of a share that still covers it tops up by one request more, and is no refusal when that does not fit.
      const need = first - share.left;
      const topUp = background && need <= 0n;
      const lacking = topUp ? first : need;
      const grant = grantOf({
        value,
        limit: counter.limit,
        lacking,
        unit: first,
        want,
        fairShare: settings.fairShare,
      });
      if (grant === 0n || (grant === undefined && topUp)) return;
      if (grant === undefined) {
        share.refusedUntil = options.now() + settings.recheckMs;
        share.refusedUsed = value;
        share.refusedLimit = counter.limit;
        // What KV said may be stale; the next claim after the pause reads it again.
        share.seen = undefined;
        return;
      }
      const op = kv.atomic();
      op.check({ key: counter.key, versionstamp: versionstamp || null });
      op.set(counter.key, new Deno.KvU64(value + grant), { expireIn: expireIn(counter, now) });
      const result = await op.commit();
      if (!result.ok) {
        stats.conflicts++;
        share.seen = undefined;
        return RETRY;
      }
      stats.claims++;
      share.seen = { value: value + grant, versionstamp: result.versionstamp };
      share.left += grant;
      share.lastGrant = grant;
      share.taken = 0n;
      share.claimedAt = options.now();
      share.expiresAt = share.claimedAt + settings.leaseMs;
      share.refusedUntil = 0;
    });
  }

  async function flushDebts(shares: Iterable<Share>): Promise<void> {
    const debts = [...shares].filter((share) => share.left < 0n).map((share) => ({
      share,
      amount: -share.left,
    }));
    if (debts.length === 0) return;
    for (const { share, amount } of debts) share.left += amount;
    const unwritten = await commitAll(kv, debts, {
      writes: options.writes,
      operation: "limit_flush",
      mutations: ({ share, amount }) => [{ sum: share.counter.key, value: amount }],
      dropped: () => {},
    });
    for (const { share, amount } of unwritten) share.left -= amount;
    const kept = new Set(unwritten);
    for (const debt of debts) {
      if (kept.has(debt)) continue;
      debt.share.seen = undefined;
      debt.share.summed = true;
    }
    if (unwritten.length < debts.length) stats.flushes++;
  }

  async function giveBack(share: Share): Promise<void> {
    const amount = share.left > 0n ? share.left : 0n;
    if (amount === 0n && !share.summed) return;
    share.left -= amount;
    try {
      await options.writes.write("limit_return", async () => {
        const entry = await kv.get(share.counter.key);
        if (entry.versionstamp === null) return;
        const value = counterValue(entry.value);
        const next = value > amount ? value - amount : 0n;
        const result = await kv.atomic().check(entry)
          .set(share.counter.key, new Deno.KvU64(next), { expireIn: expireIn(share.counter, options.now()) })
          .commit();
        if (!result.ok) {
          stats.conflicts++;
          return RETRY;
        }
        share.seen = { value: next, versionstamp: result.versionstamp };
        share.summed = false;
      });
      stats.returns++;
    } catch {
      share.left += amount;
    }
  }

  return { claim, flushDebts, giveBack };
}

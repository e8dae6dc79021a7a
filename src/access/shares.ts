/**
 * @module Leased shares of limit counters: an instance takes part of what is left of a counter's window in one
 * checked KV commit, admits requests from that local share with no KV call, settles real usage against it, and
 * gives back what it did not use when the share expires or the window ends. See docs/scaling.md for the bound
 * this keeps with several instances.
 */
import { KvWriteFailed, type KvWriter, RETRY } from "../core/kv_write.ts";
import { commitAll } from "../usage/commits.ts";
import {
  type Counter,
  counterValue,
  expireIn,
  grantOf,
  maxOf,
  SHARE_DEFAULTS,
  type ShareSettings,
  wanted,
} from "./share_size.ts";

export type { Counter, ShareSettings };

/** A counter that had no room: which of the request's needs, and what KV held on it when the share was refused. */
export interface NoRoom {
  index: number;
  used: bigint;
}

/** Counts of the KV work the shares did, for the metrics. */
export interface ShareStats {
  claims: number;
  returns: number;
  flushes: number;
  conflicts: number;
}

/** The local state of one counter's share. */
interface Share {
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

/** Options for {@linkcode createShares}. */
export interface SharesOptions {
  now(): number;
  writes: KvWriter;
  settings?: Partial<ShareSettings>;
}

/** The shares of one instance. */
export interface Shares {
  /** Takes `amount` from every counter's share, claiming from KV where one lacks room; or names a counter with none. */
  take(needs: readonly { counter: Counter; amount: bigint }[]): Promise<NoRoom | undefined>;
  /** Settles a request's real usage: `delta` = estimate - real (negative when it used more than it took). */
  settle(counter: Counter, delta: bigint): void;
  /** Writes debts, gives back expired shares and shares of ended windows; the instance's timer calls it. */
  sweep(): Promise<void>;
  /** Writes debts and gives back every share, so KV holds exactly what was used (shutdown, tests). */
  returnAll(): Promise<void>;
  stats(): ShareStats;
}

/** The shares of one instance over `kv`. */
export function createShares(kv: Deno.Kv, options: SharesOptions): Shares {
  const settings = { ...SHARE_DEFAULTS, ...options.settings };
  const shares = new Map<string, Share>();
  const stats: ShareStats = { claims: 0, returns: 0, flushes: 0, conflicts: 0 };

  function shareOf(counter: Counter): Share {
    const id = JSON.stringify(counter.key);
    let share = shares.get(id);
    if (!share) {
      share = {
        counter,
        left: 0n,
        waiting: 0n,
        expiresAt: 0,
        refusedUntil: 0,
        refusedUsed: 0n,
        refusedLimit: 0n,
        taken: 0n,
        claimedAt: 0,
        lastGrant: 0n,
        summed: false,
      };
      shares.set(id, share);
    }
    // The limit may have been changed since; the newest request carries the newest.
    share.counter = counter;
    return share;
  }

  /**
   * One checked commit that adds a grant to the counter, enough for a request of `first` with what the share holds
   * (see share_size.ts). It commits on the entry last seen and reads only when that is stale.
   */
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

  /** Joins the claim in flight for `share`, or starts one; rejects with a 503's error when KV cannot answer. */
  function claimFor(share: Share, amount: bigint, background = false): Promise<void> {
    if (share.claiming) {
      share.waiting += amount;
      return share.claiming;
    }
    const pending = claim(share, amount, background).finally(() => {
      share.claiming = undefined;
    });
    share.claiming = pending;
    return pending;
  }

  /** Waits for the claims, at most `claimWaitMs`: a KV that does not answer must not hold requests forever. */
  async function waitForClaims(claims: Promise<void>[]): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new KvWriteFailed("limit_claim", "failed", { cause: new Error("no answer in time") })),
        settings.claimWaitMs,
      );
    });
    try {
      await Promise.race([Promise.all(claims), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Tops a share up before it runs out, so a steady stream of requests never waits at a refresh. */
  function refreshSoon(share: Share, amount: bigint, now: number): void {
    if (amount === 0n || share.claiming || share.refusedUntil > now) return;
    const low = maxOf(amount, share.lastGrant / 3n);
    if (share.left >= low && share.expiresAt - now > settings.leaseMs / 4) return;
    claimFor(share, amount, true).catch(() => {
      // The writer logged and counted it; requests go on from what is left.
    });
  }

  async function take(needs: readonly { counter: Counter; amount: bigint }[]): Promise<NoRoom | undefined> {
    const held = needs.map(({ counter, amount }) => ({ share: shareOf(counter), amount }));
    for (;;) {
      const now = options.now();
      // A request that takes nothing (an unpriced model's cost) needs no share.
      const lacking = held.filter(({ share, amount }) =>
        amount > 0n && (share.left < amount || share.expiresAt <= now)
      );
      if (lacking.length === 0) {
        for (const { share, amount } of held) {
          share.left -= amount;
          share.taken += amount;
          refreshSoon(share, amount, now);
        }
        return undefined;
      }
      // KV had no room when last asked; while that is fresh, a request lacking more than that room is refused from
      // memory (one lacking less, since usage came back into the share, asks again).
      const refused = held.findIndex(({ share, amount }) =>
        share.left < amount && share.refusedUntil > now && share.refusedLimit === share.counter.limit &&
        amount - share.left > share.counter.limit - share.refusedUsed
      );
      if (refused >= 0) return { index: refused, used: held[refused].share.refusedUsed };
      const expired = lacking.filter(({ share, amount }) => share.left >= amount);
      // A share past its lease is still this instance's until given back; extend it rather than claim more.
      for (const { share } of expired) share.expiresAt = now + settings.leaseMs;
      const claims = lacking.filter(({ share, amount }) => share.left < amount)
        .map(({ share, amount }) => claimFor(share, amount));
      if (claims.length > 0) await waitForClaims(claims);
    }
  }

  /**
   * Adds every debt to KV with `sum` mutations, which need no read, in as few commits as KV allows. A debt that could
   * not be written is kept for the next sweep; one KV refuses on its own (a counter still holding a value from before
   * shares) is dropped, so it cannot hold back the others.
   */
  async function flushDebts(): Promise<void> {
    const debts = [...shares.values()].filter((share) => share.left < 0n).map((share) => ({
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

  /** Gives a share's unused part back to KV, never taking the counter below zero. */
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

  async function sweep(all = false): Promise<void> {
    await flushDebts();
    const now = options.now();
    const due = [...shares.entries()].filter(([, share]) =>
      !share.claiming && (all || share.expiresAt <= now || share.counter.windowEnd <= now)
    );
    await Promise.all(due.map(([, share]) => giveBack(share)));
    for (const [id, share] of due) {
      if (all) share.refusedUntil = 0;
      // An empty share is forgotten; a request still in flight on it settles into a new one.
      if (share.left === 0n && !share.summed && !share.claiming && share.refusedUntil <= now) shares.delete(id);
    }
  }

  return {
    take,
    settle(counter, delta) {
      if (delta !== 0n) shareOf(counter).left += delta;
    },
    sweep: () => sweep(false),
    returnAll: async () => {
      await Promise.all([...shares.values()].map((share) => share.claiming?.catch(() => {})));
      await sweep(true);
    },
    stats: () => ({ ...stats }),
  };
}

/**
 * @module Leased shares of limit counters: an instance takes part of what is left of a counter's window in one
 * checked KV commit, admits requests from that local share with no KV call, settles real usage against it, and
 * gives back what it did not use when the share expires or the window ends (the KV commits are in share_kv.ts,
 * the sizes in share_size.ts). See docs/scaling.md for the bound this keeps with several instances.
 */
import { KvWriteFailed, type KvWriter } from "../core/kv_write.ts";
import { type Share, shareKv, type ShareStats } from "./share_kv.ts";
import { type Counter, maxOf, SHARE_DEFAULTS, type ShareSettings } from "./share_size.ts";

export type { Counter, ShareSettings, ShareStats };

/** A counter that had no room: which of the request's needs, and what KV held on it when the share was refused. */
export interface NoRoom {
  index: number;
  used: bigint;
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
  const { claim, flushDebts, giveBack } = shareKv(kv, { now: options.now, writes: options.writes, settings, stats });

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

  async function sweep(all = false): Promise<void> {
    await flushDebts(shares.values());
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

/**
 * @module How big a leased share of a limit counter is (pure): what a claim asks for from the instance's recent rate,
 * and what it is granted from what is left (see docs/scaling.md, 'How a share is sized').
 */

/** One counter a request counts against, in a window that ends at `windowEnd`. */
export interface Counter {
  key: Deno.KvKey;
  /** The limit, in the counter's unit (requests, tokens, pico-units of money). */
  limit: bigint;
  /** Epoch milliseconds when the counter's window ends. */
  windowEnd: number;
}

/** Tuning of the shares; every figure is documented in docs/scaling.md. */
export interface ShareSettings {
  /** A share not topped up for this long is given back (one held by an instance that died is lost for its window). */
  leaseMs: number;
  /** How much traffic a share is sized for, at the instance's recent rate. */
  horizonMs: number;
  /** A share takes at most this fraction (1/N) of what is left, so instances that arrive late still find room. */
  fairShare: number;
  /** After a refusal, requests are refused from memory for this long before KV is asked again. */
  recheckMs: number;
  /** How long a request waits for a share before its 503 (a KV that does not answer). */
  claimWaitMs: number;
}

/** The defaults: see docs/scaling.md, 'How a share is sized'. */
export const SHARE_DEFAULTS: ShareSettings = {
  leaseMs: 10_000,
  horizonMs: 5_000,
  fairShare: 4,
  recheckMs: 1_000,
  claimWaitMs: 3_000,
};

/** A counter's value as KV holds it. */
export function counterValue(value: unknown): bigint {
  if (value instanceof Deno.KvU64) return value.value;
  // Counters written before shares existed hold a number (requests, tokens) or a bigint (cost).
  if (typeof value === "bigint") return value;
  return typeof value === "number" && Number.isFinite(value) ? BigInt(Math.max(0, Math.trunc(value))) : 0n;
}

export function maxOf(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

export function minOf(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** KV keeps a counter until a minute past its window. */
export function expireIn(counter: Counter, now: number): number {
  return Math.max(1000, counter.windowEnd - now + 60_000);
}

/** What a claim asks for: enough for `needed`, and for the recent rate (`taken` since `claimedAt`) over the horizon. */
export function wanted(needed: bigint, taken: bigint, claimedAt: number, now: number, horizonMs: number): bigint {
  const perHorizon = claimedAt === 0
    ? needed * BigInt(Math.round(horizonMs / 1000))
    : (taken * BigInt(horizonMs)) / BigInt(Math.max(1000, now - claimedAt));
  return maxOf(needed, perHorizon);
}

/**
 * What a claim is granted on a counter holding `value` of `limit` when its share lacks `lacking` (what a request of
 * `unit` needs beyond what the share holds, a debt included): at least that, and beyond it at most `want` and a
 * `1/fairShare` part of what is left, in whole requests of `unit`, so the share ends on a whole number of them. An idle
 * window grants the first request whatever it needs, so no request is refused for good. Undefined when KV has no room
 * for what is lacking; 0 when nothing is.
 */
export function grantOf(
  c: { value: bigint; limit: bigint; lacking: bigint; unit: bigint; want: bigint; fairShare: number },
): bigint | undefined {
  if (c.lacking <= 0n) return 0n;
  const room = c.limit - c.value;
  if (c.value === 0n && c.lacking > c.limit) return c.lacking;
  if (room < c.lacking) return undefined;
  const fair = minOf(c.want, minOf(room, room / BigInt(c.fairShare)));
  if (fair <= c.lacking || c.unit === 0n) return c.lacking;
  return c.lacking + (fair - c.lacking) / c.unit * c.unit;
}

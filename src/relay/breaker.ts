/**
 * @module One circuit breaker as plain data and pure steps: failing requests in a row trip it for a cooldown that
 * doubles on each repeated trip (up to a cap); when the cooldown ends one trial request (a probe) may go, and its
 * outcome closes the breaker or trips it again. A failure its caller says proves nothing about the deployment is
 * counted as seen but brings no trip.
 */

/** Breaker settings, from the config's `routing` section. */
export interface BreakerPolicy {
  failure_threshold: number;
  cooldown_ms: number;
  max_cooldown_ms: number;
}

/** One breaker's state; times are milliseconds since the epoch. */
export interface Breaker {
  /** Failing requests in a row. */
  failures: number;
  /** Those of them that count toward a trip. */
  strikes: number;
  /** Trips in a row, which double the cooldown. */
  trips: number;
  /** 0 while closed; otherwise the end of the cooldown. */
  openUntil: number;
  /** True while a probe is out. */
  probing: boolean;
  /** When the last failure was recorded (0: never). */
  lastFailureAt: number;
}

/** Where a breaker stands: closed, cooling down, waiting for its probe, or with a probe out. */
export type BreakerState = "closed" | "open" | "half_open" | "probing";

/** A closed breaker. */
export function newBreaker(): Breaker {
  return { failures: 0, strikes: 0, trips: 0, openUntil: 0, probing: false, lastFailureAt: 0 };
}

/** The breaker's state at `now`. */
export function breakerState(breaker: Breaker, now: number): BreakerState {
  if (breaker.openUntil === 0) return "closed";
  if (now < breaker.openUntil) return "open";
  return breaker.probing ? "probing" : "half_open";
}

/** A request went well: the breaker closes and the count starts again. Resets in place (it runs on every success). */
export function closeBreaker(breaker: Breaker): void {
  breaker.failures = 0;
  breaker.strikes = 0;
  breaker.trips = 0;
  breaker.openUntil = 0;
  breaker.probing = false;
}

/**
 * A request failed. A failed probe trips the breaker again (with a doubled cooldown); a closed breaker trips when the
 * count of strikes reaches the threshold; a failure while it is already open (a request sent because there was no
 * other way) only counts. A failure that is no strike (`strike: false`) trips nothing, and a probe that fails so
 * frees its slot for the next request to probe.
 */
export function failBreaker(
  breaker: Breaker,
  policy: BreakerPolicy,
  now: number,
  probe: boolean,
  strike = true,
): void {
  breaker.failures++;
  breaker.lastFailureAt = now;
  if (probe) breaker.probing = false;
  if (!strike) return;
  breaker.strikes++;
  if (!probe && (breaker.openUntil !== 0 || breaker.strikes < policy.failure_threshold)) return;
  breaker.trips++;
  breaker.openUntil = now + Math.min(policy.max_cooldown_ms, policy.cooldown_ms * 2 ** (breaker.trips - 1));
}

/**
 * A request has started to succeed (a stream began): others may use the deployment again, but the failures in a row
 * stand until the request ends well ({@linkcode closeBreaker}) or not ({@linkcode failBreaker}).
 */
export function liftCooldown(breaker: Breaker): void {
  breaker.openUntil = 0;
  breaker.probing = false;
}

/** Frees a probe slot without a verdict, so the next request may probe. */
export function releaseProbe(breaker: Breaker): void {
  breaker.probing = false;
}

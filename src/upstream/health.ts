/**
 * @module Per-upstream health as a circuit breaker: after `failure_threshold` failures in a row an upstream is
 * skipped for a cooldown that doubles on each repeated trip (up to a cap); when it ends, one probe request is
 * let through (half-open) and its success closes the breaker. State is per process and held by the caller.
 */

/** Breaker settings, from the config's `routing` section. */
export interface HealthPolicy {
  failure_threshold: number;
  cooldown_ms: number;
  max_cooldown_ms: number;
}

/** One upstream's state as `GET /healthz` shows it. */
export interface UpstreamHealth {
  state: "ok" | "cooling_down" | "probing";
  /** ISO time until which the upstream is skipped, while cooling down. */
  cooling_until: string | null;
  /** Failures in a row. */
  recent_failures: number;
}

interface Breaker {
  failures: number;
  trips: number;
  openUntil: number;
  probing: boolean;
}

/** The health of every upstream in one process. */
export interface HealthBoard {
  /** True when a request may go to this upstream now; a half-open upstream admits one probe at a time. */
  tryAcquire(upstream: string): boolean;
  success(upstream: string): void;
  /** Records a failure; `retryAfterMs` from the upstream extends the cooldown when it is longer. */
  failure(upstream: string, retryAfterMs?: number): void;
  /**
   * A stream began: a probe has shown the upstream answers, so the breaker closes and others may use it, but the
   * failures in a row stand until the stream ends well ({@linkcode success}) or not ({@linkcode failure}).
   */
  started(upstream: string): void;
  /** The upstream asked for a pause (a 429's retry-after): skipped until then, without counting a failure. */
  pause(upstream: string, ms: number): void;
  /** An attempt ended without telling anything about the upstream (the client left): frees a probe slot. */
  release(upstream: string): void;
  /** Milliseconds until the first skipped upstream among `upstreams` may be tried again (0 if one may now). */
  waitMs(upstreams: readonly string[]): number;
  snapshot(upstreams: readonly string[]): Record<string, UpstreamHealth>;
}

/** Creates a board; `now` is injected so tests control time. */
export function createHealthBoard(policy: HealthPolicy, now: () => number): HealthBoard {
  const breakers = new Map<string, Breaker>();
  const get = (name: string): Breaker => {
    let breaker = breakers.get(name);
    if (!breaker) breakers.set(name, breaker = { failures: 0, trips: 0, openUntil: 0, probing: false });
    return breaker;
  };
  return {
    tryAcquire(upstream) {
      const breaker = get(upstream);
      if (breaker.openUntil === 0) return true;
      if (now() < breaker.openUntil || breaker.probing) return false;
      breaker.probing = true;
      return true;
    },
    success(upstream) {
      // Reset in place: this runs on every successful request.
      const breaker = get(upstream);
      breaker.failures = 0;
      breaker.trips = 0;
      breaker.openUntil = 0;
      breaker.probing = false;
    },
    failure(upstream, retryAfterMs) {
      const breaker = get(upstream);
      breaker.failures++;
      const halfOpen = breaker.probing;
      breaker.probing = false;
      if (!halfOpen && breaker.failures < policy.failure_threshold && retryAfterMs === undefined) return;
      if (halfOpen || breaker.failures >= policy.failure_threshold) breaker.trips++;
      const cooldown = breaker.trips === 0
        ? 0
        : Math.min(policy.max_cooldown_ms, policy.cooldown_ms * 2 ** (breaker.trips - 1));
      breaker.openUntil = Math.max(breaker.openUntil, now() + Math.max(cooldown, retryAfterMs ?? 0));
    },
    started(upstream) {
      const breaker = get(upstream);
      breaker.openUntil = 0;
      breaker.probing = false;
    },
    pause(upstream, ms) {
      const breaker = get(upstream);
      breaker.probing = false;
      breaker.openUntil = Math.max(breaker.openUntil, now() + ms);
    },
    release(upstream) {
      get(upstream).probing = false;
    },
    waitMs(upstreams) {
      let wait = Infinity;
      for (const name of upstreams) {
        const breaker = get(name);
        // A probe in flight settles soon; a second is a fair hint for a client's retry.
        const until = breaker.openUntil === 0 ? 0 : breaker.probing ? 1000 : breaker.openUntil - now();
        wait = Math.min(wait, Math.max(0, until));
      }
      return wait === Infinity ? 0 : wait;
    },
    snapshot(upstreams) {
      const out: Record<string, UpstreamHealth> = {};
      for (const name of upstreams) {
        const breaker = get(name);
        const cooling = breaker.openUntil !== 0 && now() < breaker.openUntil;
        out[name] = {
          state: breaker.probing ? "probing" : cooling ? "cooling_down" : "ok",
          cooling_until: cooling ? new Date(breaker.openUntil).toISOString() : null,
          recent_failures: breaker.failures,
        };
      }
      return out;
    },
  };
}

/**
 * @module A retry budget per deployment, in the manner of Envoy's and Finagle's: over a sliding window, the gateway's
 * retries to one deployment may number `min_retries` plus `ratio` times the requests that went to it, so during an
 * incident the gateway adds at most that share to what the clients already send (and retry) themselves.
 */

/** Budget settings, from the config's `routing.retry_budget`. */
export interface RetryBudgetPolicy {
  /** Retries allowed per request in the window (0.2: one retry per five requests). */
  ratio: number;
  /** Retries allowed in the window however few the requests, so a quiet deployment may still retry. */
  min_retries: number;
  window_ms: number;
}

/** The budgets of every deployment in one process, keyed by the caller. */
export interface RetryBudget {
  /** Notes a request's first attempt to `key`. */
  deposit(key: string): void;
  /** True when a retry to `key` would fit the budget now. */
  canRetry(key: string): boolean;
  /** Spends one retry of `key`'s budget. */
  withdraw(key: string): void;
}

/** The window is kept as this many buckets, so counts age out in steps of a tenth of it. */
const BUCKETS = 10;

interface Window {
  /** The bucket number (time / bucket width) each slot holds, so a stale slot is known and reset. */
  epochs: number[];
  requests: number[];
  retries: number[];
}

/** Creates the budgets; `now` is injected so tests control time. */
export function createRetryBudget(policy: RetryBudgetPolicy, now: () => number): RetryBudget {
  const width = Math.max(1, Math.ceil(policy.window_ms / BUCKETS));
  const windows = new Map<string, Window>();
  const get = (key: string): Window => {
    let window = windows.get(key);
    if (!window) {
      const zeros = () => new Array<number>(BUCKETS).fill(0);
      windows.set(key, window = { epochs: new Array<number>(BUCKETS).fill(-1), requests: zeros(), retries: zeros() });
    }
    return window;
  };
  /** The current bucket's slot, emptied first when it last held an older bucket. */
  const slot = (window: Window): number => {
    const epoch = Math.floor(now() / width);
    const at = epoch % BUCKETS;
    if (window.epochs[at] !== epoch) {
      window.epochs[at] = epoch;
      window.requests[at] = 0;
      window.retries[at] = 0;
    }
    return at;
  };
  const sum = (window: Window, counts: number[]): number => {
    const oldest = Math.floor(now() / width) - BUCKETS + 1;
    let total = 0;
    for (let i = 0; i < BUCKETS; i++) if (window.epochs[i] >= oldest) total += counts[i];
    return total;
  };
  return {
    deposit(key) {
      const window = get(key);
      window.requests[slot(window)]++;
    },
    canRetry(key) {
      const window = get(key);
      return sum(window, window.retries) < policy.min_retries + policy.ratio * sum(window, window.requests);
    },
    withdraw(key) {
      const window = get(key);
      window.retries[slot(window)]++;
    },
  };
}

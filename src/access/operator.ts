/**
 * @module The operator's side of one gateway instance, assembled from the config: the token cache, the limits
 * and usage observers, and the admin key. `close()` stops them in order at shutdown.
 */
import type { Config } from "../core/config.ts";
import type { Observer } from "../core/exchange.ts";
import { highestPrices } from "../usage/cost.ts";
import { type DayCache, dayCache } from "../usage/day_cache.ts";
import { type UsageRecorder, usageRecorder } from "../usage/recorder.ts";
import { type CachedCredentials, cachedCredentials } from "./auth_cache.ts";
import { createLimiter, type Limiter } from "./limiter.ts";
import type { Store } from "./store.ts";

/** What the operator side adds to an instance. */
export interface Operator {
  credentials: CachedCredentials;
  limiter: Limiter;
  usage: UsageRecorder;
  /** Closed days' usage totals, read once from KV, for the admin API and the console. */
  usageDays: DayCache;
  /** The admin API's key; the API is off when it is undefined. */
  adminKey: string | undefined;
  /** The observers to run, limits first so a refused request is still recorded. */
  observers: readonly Observer[];
  /** Writes batched usage and pending limit charges, then stops the cache's polling. */
  close(): Promise<void>;
}

/** Options for {@linkcode createOperator}. */
export interface OperatorOptions {
  env(name: string): string | undefined;
  log(line: Record<string, unknown>): void;
  now(): number;
}

/** Builds the operator side over `store`. */
export function createOperator(config: Config, store: Store, options: OperatorOptions): Operator {
  const credentials = cachedCredentials(store, { refreshMs: config.usage.auth_refresh_ms, log: options.log });
  const limiter = createLimiter(store.kv, {
    now: options.now,
    writes: store.writes,
    prices: highestPrices(config),
    currency: config.currency,
    shares: { leaseMs: config.limit_shares.lease_ms, horizonMs: config.limit_shares.horizon_ms },
    sweepMs: config.limit_shares.sweep_ms,
  });
  const usage = usageRecorder(store.kv, {
    writes: store.writes,
    flushMs: config.usage.flush_ms,
    logDays: config.usage.request_log_days,
    log: options.log,
  });
  return {
    credentials,
    limiter,
    usage,
    usageDays: dayCache(),
    adminKey: options.env("MODELGATE_ADMIN_KEY") || undefined,
    observers: [limiter, usage],
    async close() {
      await limiter.close();
      await usage.close();
      await credentials.close();
    },
  };
}

/**
 * @module The operator's side of one gateway instance, assembled from the config: the token cache, the limits
 * and usage observers, the admin key, and the identity provider's client. `close()` stops them in order at shutdown.
 */
import type { Config } from "../core/config.ts";
import type { Guard, Observer } from "../core/exchange.ts";
import { highestPrices } from "../usage/cost.ts";
import { type DayCache, dayCache } from "../usage/day_cache.ts";
import { type UsageRecorder, usageRecorder } from "../usage/recorder.ts";
import { type CachedCredentials, cachedCredentials } from "./auth_cache.ts";
import { type AuthGuard, createAuthGuard } from "./guard.ts";
import { createLimiter, type Limiter } from "./limiter.ts";
import { type OidcClient, oidcClient } from "./oidc.ts";
import { suspensionOf } from "./people.ts";
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
  /** Slows wrong admin keys and tokens per client address. */
  guard: AuthGuard;
  /** The identity provider's client, when `auth.oidc` is configured. */
  oidc: OidcClient | undefined;
  /** The guards that may refuse a request: the limits. */
  guards: readonly Guard[];
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
  /** How the identity provider is reached; tests put what a network attacker could do between the two. */
  fetch?: typeof fetch;
}

/**
 * The shortest admin key the gateway starts with. The key guards every token and the console; a short one falls to
 * guessing from many addresses, however slowly each may guess.
 */
export const MIN_ADMIN_KEY_LENGTH = 32;

/** The admin key from the environment, or undefined; throws when it is set but too short to be safe. */
export function adminKeyFrom(env: (name: string) => string | undefined): string | undefined {
  const key = env("MODELGATE_ADMIN_KEY") || undefined;
  if (key !== undefined && key.length < MIN_ADMIN_KEY_LENGTH) {
    throw new Error(
      `MODELGATE_ADMIN_KEY is ${key.length} character${key.length === 1 ? "" : "s"} long; it must be at least ` +
        `${MIN_ADMIN_KEY_LENGTH} ` +
        "(make one with: openssl rand -hex 24), or unset it to turn the admin API and the console off",
    );
  }
  return key;
}

/**
 * The identity provider's client, or undefined when `auth.oidc` is not configured; throws when it is but the console
 * it signs in to is off (no admin key), or its client secret is not in the environment.
 */
export function oidcFrom(
  config: Config,
  options: OperatorOptions,
  adminKey: string | undefined,
): OidcClient | undefined {
  const oidc = config.auth.oidc;
  if (!oidc) return undefined;
  if (!adminKey) {
    throw new Error("auth.oidc signs people in to the console, which is off without MODELGATE_ADMIN_KEY; set it");
  }
  const clientSecret = options.env(oidc.client_secret_env) || undefined;
  if (!clientSecret) {
    throw new Error(`auth.oidc.client_secret_env names ${oidc.client_secret_env}, which is not set in the environment`);
  }
  const groupsUnasked = groupsScopeWarning(oidc);
  if (groupsUnasked) options.log({ level: "warn", event: "oidc_groups_not_requested", advice: groupsUnasked });
  return oidcClient(oidc, { clientSecret, now: () => new Date(options.now()), fetch: options.fetch });
}

/**
 * What to change when rules match on `group` but `scopes` does not ask for `groups`: most providers (Okta, Keycloak)
 * then send no groups claim, and those rules match nobody. Microsoft Entra ID's groups claim comes from the app
 * registration's token configuration, not from a scope (see docs/running-for-a-team.md), so its issuer is not warned.
 */
export function groupsScopeWarning(oidc: NonNullable<Config["auth"]["oidc"]>): string | undefined {
  if (!oidc.roles.some((rule) => rule.group !== undefined) || oidc.scopes.includes("groups")) return undefined;
  if (new URL(oidc.issuer).hostname === "login.microsoftonline.com") return undefined;
  return "auth.oidc.roles match on group, but auth.oidc.scopes does not ask for groups, so the provider may send no " +
    "groups claim and those rules would match nobody: add groups to auth.oidc.scopes (see " +
    "docs/running-for-a-team.md, Rules for common providers)";
}

/** Builds the operator side over `store`; throws when the admin key is too short or sign-in cannot work. */
export function createOperator(config: Config, store: Store, options: OperatorOptions): Operator {
  const adminKey = adminKeyFrom(options.env);
  const oidc = oidcFrom(config, options, adminKey);
  const rules = config.auth.oidc?.roles ?? [];
  const credentials = cachedCredentials(store, {
    refreshMs: config.usage.auth_refresh_ms,
    log: options.log,
    judge: (owner) => suspensionOf(store.kv, rules, owner),
  });
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
    adminKey,
    guard: createAuthGuard({ now: options.now, log: options.log }),
    oidc,
    guards: [limiter],
    observers: [limiter, usage],
    async close() {
      await limiter.close();
      await usage.close();
      await credentials.close();
    },
  };
}

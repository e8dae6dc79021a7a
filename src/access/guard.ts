/**
 * @module Slows credential guessing: a token bucket of wrong attempts per client address and credential kind, kept
 * in this process's memory for a bounded number of addresses. Only the guessing address waits; another is not touched,
 * and right credentials cost nothing.
 */
import { throttleKey } from "../core/addresses.ts";
import { GatewayError } from "../core/errors.ts";

/**
 * What is being guessed or flooded: the admin key (admin API, console sign-in), a client token (the /v1 routes), a
 * sign-in through the identity provider (the console's OIDC callback: a forged state, code or id_token), or the CLI's
 * sign-in (each grant started at the identity provider, and polls with unknown or too early codes), or an MCP client's
 * registration with the OAuth server of /mcp (each one, since anyone may register).
 */
export type CredentialKind = "admin_key" | "token" | "sign_in" | "device" | "oauth_client";

/** How many wrong attempts an address may make at once, and how fast it earns another. */
export interface Allowance {
  burst: number;
  refillMs: number;
}

/**
 * The admin key gets few tries: its one operator types it rarely. Tokens get more, since many people's clients may
 * share one address (an office behind NAT) and a revoked token is retried by hand.
 */
export const ALLOWANCES: Record<CredentialKind, Allowance> = {
  admin_key: { burst: 5, refillMs: 12_000 },
  token: { burst: 20, refillMs: 3_000 },
  // A person may fail a few sign-ins in a row (a stale tab, a second window); a script replaying callbacks may not.
  sign_in: { burst: 10, refillMs: 6_000 },
  // A team may onboard together from one office address; past that, ten CLI sign-ins a minute.
  device: { burst: 20, refillMs: 6_000 },
  // Each MCP client's registration (anyone may register one): a team connecting together, then ten a minute.
  oauth_client: { burst: 20, refillMs: 6_000 },
};

/** Addresses tracked at most per kind; past it, full buckets go first, then those that owe nothing, then the rest. */
export const MAX_TRACKED_ADDRESSES = 10_000;

/** One credential check that the guard let through. */
export interface Attempt {
  /** The credential was wrong: the address is charged one attempt. */
  failed(): void;
}

/** The guard in front of every credential check. */
export interface AuthGuard {
  /**
   * Lets a check go ahead, or throws a 429 with `retry-after` while the address has no attempt left. Right
   * credentials cost nothing, so any number of a working client's requests may be in flight at once; wrong ones are
   * charged when they fail, and guesses sent together all pass the gate but leave the address in debt, waiting until
   * every one of them is paid for, so sending them at once gains nothing over time.
   */
  attempt(kind: CredentialKind, address: string): Attempt;
  /** Refusals so far per kind, for the metrics page. */
  refusals(): ReadonlyMap<CredentialKind, number>;
  /** Addresses tracked now per kind. */
  tracked(kind: CredentialKind): number;
}

/** Options for {@linkcode createAuthGuard}. */
export interface AuthGuardOptions {
  now(): number;
  log(line: Record<string, unknown>): void;
  allowances?: Record<CredentialKind, Allowance>;
  maxAddresses?: number;
}

interface Bucket {
  at: number;
  /** Attempts left; below zero when guesses sent together overdrew it, and then the wait pays the debt. */
  tokens: number;
  /** True once a refusal was logged, until the bucket has an attempt again: one line per episode, not per guess. */
  refusing: boolean;
}

/** A guard with empty tables. */
export function createAuthGuard(options: AuthGuardOptions): AuthGuard {
  const allowances = options.allowances ?? ALLOWANCES;
  const cap = options.maxAddresses ?? MAX_TRACKED_ADDRESSES;
  const tables: Record<CredentialKind, Map<string, Bucket>> = {
    admin_key: new Map(),
    token: new Map(),
    sign_in: new Map(),
    device: new Map(),
    oauth_client: new Map(),
  };
  const refusals = new Map<CredentialKind, number>();

  function refill(bucket: Bucket, allowance: Allowance, now: number): void {
    bucket.tokens = Math.min(allowance.burst, bucket.tokens + (now - bucket.at) / allowance.refillMs);
    bucket.at = now;
  }

  /**
   * Forgets addresses until the table has room for one more: first those whose bucket is full again (what an address
   * never seen has anyway), then the longest-tracked that owe nothing, and an address in debt only when every one
   * left is, so a flood of new addresses cannot wipe a guesser's debt.
   */
  function makeRoom(table: Map<string, Bucket>, allowance: Allowance, now: number): void {
    if (table.size < cap) return;
    for (const [key, bucket] of table) {
      refill(bucket, allowance, now);
      if (bucket.tokens >= allowance.burst) table.delete(key);
    }
    for (const [key, bucket] of table) {
      if (table.size < cap) return;
      if (bucket.tokens >= 1) table.delete(key);
    }
    for (const key of table.keys()) {
      if (table.size < cap) return;
      table.delete(key);
    }
  }

  function refuse(kind: CredentialKind, key: string, bucket: Bucket, allowance: Allowance): GatewayError {
    const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) * allowance.refillMs / 1000));
    refusals.set(kind, (refusals.get(kind) ?? 0) + 1);
    if (!bucket.refusing) {
      bucket.refusing = true;
      options.log({ level: "warn", event: "auth_throttled", credential: kind, client: key, retry_after_s: retryAfter });
    }
    const what = {
      admin_key: "wrong admin keys",
      token: "wrong API keys",
      sign_in: "wrong sign-ins",
      device: "sign-in requests",
      oauth_client: "client registrations",
    }[kind];
    return new GatewayError("rate_limit", `Too many ${what} from this address; retry in ${retryAfter} s`, {
      headers: { "retry-after": String(retryAfter) },
    });
  }

  return {
    attempt(kind, address) {
      const allowance = allowances[kind];
      const table = tables[kind];
      // Most addresses never sent a wrong credential: with none remembered, the address is parsed only on a failure.
      let key = table.size > 0 ? throttleKey(address) : undefined;
      const seen = key === undefined ? undefined : table.get(key);
      if (seen && key !== undefined) {
        refill(seen, allowance, options.now());
        if (seen.tokens < 1) throw refuse(kind, key, seen, allowance);
        seen.refusing = false;
        // A bucket full again is what an address never seen has: it needs no memory.
        if (seen.tokens >= allowance.burst) table.delete(key);
      }
      return {
        failed() {
          const now = options.now();
          key ??= throttleKey(address);
          let bucket = table.get(key);
          if (bucket) refill(bucket, allowance, now);
          else {
            // Only addresses that have sent a wrong credential are remembered.
            makeRoom(table, allowance, now);
            bucket = { tokens: allowance.burst, at: now, refusing: false };
            table.set(key, bucket);
          }
          bucket.tokens -= 1;
        },
      };
    },
    refusals: () => refusals,
    tracked: (kind) => tables[kind].size,
  };
}

/**
 * @module Limits as an observer. Before the upstream call, one request and the request's estimated tokens and cost
 * are reserved on every counter its token's and group's limits name, in a single KV commit guarded by the counters'
 * versionstamps, so instances sharing the KV never both take the last unit. After the call the estimate is
 * replaced by the real usage and cost (or refunded when nothing was used).
 */
import type { Limits } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { Exchange, Observer } from "../core/exchange.ts";
import { KvWriteFailed, type KvWriter, RETRY } from "../core/kv_write.ts";
import { formatMoney, picoOf, type Price } from "../core/money.ts";
import type { Principal } from "../core/principal.ts";
import type { JsonObject } from "../core/types.ts";
import { costOf, estimateCost } from "../usage/cost.ts";
import { COUNT_TOKENS_ROUTE } from "../usage/log_entry.ts";
import {
  type Breach,
  estimateRequest,
  hasLimits,
  LIMIT_FIELDS,
  rateLimitHeaders,
  totalTokens,
  type Unit,
  windowOf,
} from "./limits.ts";

/** One counter a request counts against; cost counts in pico-units. */
interface Slot {
  key: Deno.KvKey;
  who: string;
  field: keyof Limits;
  unit: Unit;
  limit: bigint;
  amount: bigint;
  resetAt: number;
  /** How long KV keeps the counter: until a minute past its window, measured on the limiter's clock. */
  expireIn: number;
}

/** The limits observer plus its shutdown. */
export interface Limiter extends Observer {
  /** Waits until the real usage of finished requests has replaced their estimates. */
  settled(): Promise<void>;
  /** Waits for charges still being written. */
  close(): Promise<void>;
}

/** Options for {@linkcode createLimiter}. */
export interface LimiterOptions {
  now(): number;
  /** Per public model, the highest price among its deployments, for the cost a request reserves. */
  prices?: ReadonlyMap<string, Price>;
  /** The label budgets are named with in a 429's message. */
  currency?: string;
  /** Commits with bounded retries when other requests or processes write the same counters. */
  writes: KvWriter;
}

/** What a request reserves on each kind of counter. */
type Amounts = Record<Unit, bigint>;

/** The counters one request counts against, from its token's and its group's limits. */
function slotsFor(
  scopes: { scope: "token" | "group"; id: string; limits?: Limits }[],
  amounts: Amounts,
  now: number,
): Slot[] {
  const slots: Slot[] = [];
  for (const { scope, id, limits } of scopes) {
    for (const [field, limit] of Object.entries(limits ?? {}) as [keyof Limits, number | undefined][]) {
      if (typeof limit !== "number" || !(field in LIMIT_FIELDS)) continue;
      const { unit, window } = LIMIT_FIELDS[field];
      const { id: windowId, end } = windowOf(window, now);
      slots.push({
        key: ["limit", scope, id, unit, window, windowId],
        who: `${scope === "token" ? "API key" : "Group"} "${id}"`,
        field,
        unit,
        limit: unit === "cost" ? picoOf(limit) : BigInt(limit),
        amount: amounts[unit],
        resetAt: end,
        expireIn: Math.max(1000, end - now + 60_000),
      });
    }
  }
  return slots;
}

/** A counter's value as KV keeps it: requests and tokens as numbers (as they always were), cost as a bigint. */
type Stored = number | bigint;

function counted(value: Stored | null): bigint {
  return typeof value === "bigint" ? value : BigInt(Math.trunc(value ?? 0));
}

function stored(slot: Slot, value: bigint): Stored {
  return slot.unit === "cost" ? value : Number(value);
}

/**
 * Takes `amount` on every slot at once, or reports the first slot that has no room. A store that cannot take the
 * reservation (busy or contended past the writer's bounds) is a 503 with retry-after: the limit cannot be checked.
 */
async function reserve(
  kv: Deno.Kv,
  slots: Slot[],
  writes: KvWriter,
): Promise<{ slot: Slot; used: bigint } | undefined> {
  try {
    return await writes.write("limit_reserve", async () => {
      const entries = await kv.getMany<Stored[]>(slots.map((slot) => slot.key));
      const op = kv.atomic();
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[i];
        const used = counted(entries[i].value);
        // An idle window admits one request whatever its estimate, so no request is refused for good; the limit
        // then holds within that one request.
        if (used > 0n && used + slot.amount > slot.limit) return { slot, used };
        op.check(entries[i]).set(slot.key, stored(slot, used + slot.amount), { expireIn: slot.expireIn });
      }
      return (await op.commit()).ok ? undefined : RETRY;
    });
  } catch (err) {
    if (!(err instanceof KvWriteFailed)) throw err;
    throw new GatewayError("unavailable", "The rate limits of this API key cannot be checked right now; try again", {
      headers: { "retry-after": "1" },
      cause: err,
    });
  }
}

/** Adds `delta` (which may be negative) to a counter, never below zero; a give-up is logged and counted. */
function adjust(kv: Deno.Kv, slot: Slot, delta: bigint, writes: KvWriter): Promise<void> {
  return writes.write("limit_adjust", async () => {
    const entry = await kv.get<Stored>(slot.key);
    if (entry.value === null) return;
    const sum = counted(entry.value) + delta;
    const value = stored(slot, sum > 0n ? sum : 0n);
    return (await kv.atomic().check(entry).set(slot.key, value, { expireIn: slot.expireIn }).commit()).ok
      ? undefined
      : RETRY;
  });
}

/** The 429 for a slot with no room; its message names the limit, never what others used of it. */
function refusal(refused: { slot: Slot; used: bigint }, exchange: Exchange, options: LimiterOptions): GatewayError {
  const { slot, used } = refused;
  const now = options.now();
  const breach: Breach = { unit: slot.unit, limit: Number(slot.limit), used: Number(used), resetAt: slot.resetAt };
  const currency = options.currency ?? "USD";
  const what = slot.unit === "cost"
    ? `budget ${slot.field} = ${formatMoney(slot.limit)} ${currency} (this request is estimated at ${
      formatMoney(slot.amount)
    } ${currency})`
    : `limit ${slot.field} = ${slot.limit}${
      slot.unit === "tokens" ? ` (this request may use up to ${slot.amount})` : ""
    }`;
  return new GatewayError(
    "rate_limit",
    `${slot.who} is over its ${what}; it resets at ${new Date(slot.resetAt).toISOString()}`,
    { headers: rateLimitHeaders(breach, exchange.protocol, now) },
  );
}

/** The limits observer over `kv`. */
export function createLimiter(kv: Deno.Kv, options: LimiterOptions): Limiter {
  // Keyed by the exchange itself: a request id is client input, and two requests may share one.
  const reserved = new Map<Exchange, { slots: Slot[]; estimate: Amounts }>();
  const charging = new Set<Promise<void>>();

  async function admit(exchange: Exchange, body: JsonObject, principal: Principal): Promise<void> {
    // Counting tokens is free upstream and uses no model capacity, so it is neither limited nor charged.
    if (exchange.route === COUNT_TOKENS_ROUTE) return;
    const { token, group } = principal;
    // Most tokens have no limits; they cost neither an estimate of the body nor a KV write.
    if (!hasLimits(token.limits) && !hasLimits(group.limits)) return;
    const tokens = estimateRequest(body);
    const estimate: Amounts = {
      requests: 1n,
      tokens: BigInt(tokens.prompt + tokens.output),
      cost: estimateCost(tokens, exchange.model ? options.prices?.get(exchange.model) : undefined),
    };
    const slots = slotsFor(
      [
        { scope: "token", id: token.id, limits: token.limits },
        { scope: "group", id: token.group, limits: group.limits },
      ],
      estimate,
      options.now(),
    );
    if (slots.length === 0) return;
    const refused = await reserve(kv, slots, options.writes);
    if (refused) throw refusal(refused, exchange, options);
    const held = slots.filter((slot) => slot.unit !== "requests");
    if (held.length > 0) reserved.set(exchange, { slots: held, estimate });
  }

  async function settled(): Promise<void> {
    await Promise.all(charging);
  }

  return {
    admit,
    finish(exchange) {
      const held = reserved.get(exchange);
      if (!held) return;
      reserved.delete(exchange);
      // A delivered answer whose usage is unknown (an OpenAI stream without include_usage) keeps its estimate;
      // a failed one gives it back. Cost is priced at the deployment that answered.
      const { usage } = exchange;
      const used: Amounts = usage
        ? { requests: 1n, tokens: BigInt(totalTokens(usage)), cost: costOf(usage, exchange.price) }
        : exchange.status < 400
        ? held.estimate
        : { requests: 1n, tokens: 0n, cost: 0n };
      const changed = held.slots.filter((slot) => used[slot.unit] !== slot.amount);
      if (changed.length === 0) return;
      const charge = Promise.all(
        changed.map((slot) => adjust(kv, slot, used[slot.unit] - slot.amount, options.writes)),
      ).then(
        () => {},
        // A charge the store would not take is already logged and counted by the writer.
        () => {},
      );
      charging.add(charge);
      charge.finally(() => charging.delete(charge));
    },
    settled,
    // Nothing else is held open: closing is waiting for the charges in flight.
    close: settled,
  };
}

/**
 * @module Limits as an observer. Before the upstream call, one request and the request's token estimate are
 * reserved on every counter its token's and group's limits name, in a single KV commit guarded by the counters'
 * versionstamps, so instances sharing the KV never both take the last unit. After the call the estimate is
 * replaced by the real usage (or refunded when nothing was used).
 */
import type { Limits } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { Exchange, Observer } from "../core/exchange.ts";
import type { Principal } from "../core/principal.ts";
import type { JsonObject } from "../core/types.ts";
import { COUNT_TOKENS_ROUTE } from "../usage/recorder.ts";
import {
  type Breach,
  estimateRequestTokens,
  hasLimits,
  LIMIT_FIELDS,
  rateLimitHeaders,
  totalTokens,
  windowOf,
} from "./limits.ts";

/** One counter a request counts against. */
interface Slot {
  key: Deno.KvKey;
  who: string;
  field: keyof Limits;
  limit: number;
  amount: number;
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
  log(line: Record<string, unknown>): void;
}

// Each failed commit means another request took a unit in between, so this bounds the waiting requests.
const MAX_TRIES = 200;

/** The counters one request counts against, from its token's and its group's limits. */
function slotsFor(
  scopes: { scope: "token" | "group"; id: string; limits?: Limits }[],
  estimate: number,
  now: number,
): Slot[] {
  const slots: Slot[] = [];
  for (const { scope, id, limits } of scopes) {
    for (const [field, limit] of Object.entries(limits ?? {}) as [keyof Limits, number | undefined][]) {
      if (typeof limit !== "number") continue;
      const { unit, window } = LIMIT_FIELDS[field];
      const { id: windowId, end } = windowOf(window, now);
      slots.push({
        key: ["limit", scope, id, unit, window, windowId],
        who: `${scope === "token" ? "API key" : "Group"} "${id}"`,
        field,
        limit,
        amount: unit === "requests" ? 1 : estimate,
        resetAt: end,
        expireIn: Math.max(1000, end - now + 60_000),
      });
    }
  }
  return slots;
}

/** Takes `amount` on every slot at once, or reports the first slot that has no room. */
async function reserve(kv: Deno.Kv, slots: Slot[]): Promise<{ slot: Slot; used: number } | undefined> {
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const entries = await kv.getMany<number[]>(slots.map((slot) => slot.key));
    const op = kv.atomic();
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i];
      const used = entries[i].value ?? 0;
      // An idle window admits one request whatever its estimate, so no request is refused for good; the limit
      // then holds within that one request.
      if (used > 0 && used + slot.amount > slot.limit) return { slot, used };
      op.check(entries[i]).set(slot.key, used + slot.amount, { expireIn: slot.expireIn });
    }
    if ((await op.commit()).ok) return undefined;
  }
  throw new GatewayError("rate_limit", "Too many concurrent requests for this API key's limits; try again", {
    headers: { "retry-after": "1" },
  });
}

/** Adds `delta` (which may be negative) to a counter, never below zero. */
async function adjust(kv: Deno.Kv, slot: Slot, delta: number): Promise<void> {
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const entry = await kv.get<number>(slot.key);
    if (entry.value === null) return;
    const value = Math.max(0, entry.value + delta);
    if ((await kv.atomic().check(entry).set(slot.key, value, { expireIn: slot.expireIn }).commit()).ok) return;
  }
}

/** The limits observer over `kv`. */
export function createLimiter(kv: Deno.Kv, options: LimiterOptions): Limiter {
  // Keyed by the exchange itself: a request id is client input, and two requests may share one.
  const reserved = new Map<Exchange, { slots: Slot[]; estimate: number }>();
  const charging = new Set<Promise<void>>();

  async function admit(exchange: Exchange, body: JsonObject, principal: Principal): Promise<void> {
    // Counting tokens is free upstream and uses no model capacity, so it is neither limited nor charged.
    if (exchange.route === COUNT_TOKENS_ROUTE) return;
    const { token, group } = principal;
    // Most tokens have no limits; they cost neither an estimate of the body nor a KV write.
    if (!hasLimits(token.limits) && !hasLimits(group.limits)) return;
    const now = options.now();
    const estimate = estimateRequestTokens(body);
    const slots = slotsFor(
      [
        { scope: "token", id: token.id, limits: token.limits },
        { scope: "group", id: token.group, limits: group.limits },
      ],
      estimate,
      now,
    );
    if (slots.length === 0) return;
    const refused = await reserve(kv, slots);
    if (refused) {
      const { slot, used } = refused;
      const unit = LIMIT_FIELDS[slot.field].unit;
      const breach: Breach = { unit, limit: slot.limit, used, resetAt: slot.resetAt };
      const asked = unit === "tokens" ? ` (this request may use up to ${slot.amount})` : "";
      throw new GatewayError(
        "rate_limit",
        `${slot.who} is over its limit ${slot.field} = ${slot.limit}${asked}; it resets at ${
          new Date(slot.resetAt).toISOString()
        }`,
        { headers: rateLimitHeaders(breach, exchange.protocol, now) },
      );
    }
    const tokenSlots = slots.filter((slot) => LIMIT_FIELDS[slot.field].unit === "tokens");
    if (tokenSlots.length > 0) reserved.set(exchange, { slots: tokenSlots, estimate });
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
      // a failed one gives it back.
      const used = exchange.usage ? totalTokens(exchange.usage) : exchange.status < 400 ? held.estimate : 0;
      const delta = used - held.estimate;
      if (delta === 0) return;
      const charge = Promise.all(held.slots.map((slot) => adjust(kv, slot, delta))).then(() => {}, (err) => {
        options.log({ event: "limit_charge_failed", error: String((err as Error)?.message ?? err) });
      });
      charging.add(charge);
      charge.finally(() => charging.delete(charge));
    },
    settled,
    // Nothing else is held open: closing is waiting for the charges in flight.
    close: settled,
  };
}

/**
 * @module Limits as an observer. Before the upstream call, one request and the request's estimated tokens and cost
 * are taken from this instance's leased shares of every counter its token's and group's limits name (no KV call
 * while the shares have room; see access/shares.ts). After the call the estimate is replaced by the real usage and
 * cost, settled against the same shares, and KV learns it in batches.
 */
import type { Limits } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { Exchange, Guard, Observer } from "../core/exchange.ts";
import { KvWriteFailed, type KvWriter } from "../core/kv_write.ts";
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
import { type Counter, createShares, type NoRoom, type ShareSettings, type ShareStats } from "./shares.ts";

/** One counter a request counts against; cost counts in pico-units. */
interface Slot {
  counter: Counter;
  who: string;
  field: keyof Limits;
  unit: Unit;
  amount: bigint;
}

/** The limits observer plus its shutdown. */
export interface Limiter extends Observer, Guard {
  /** Writes what finished requests used beyond their shares and gives every share back, so KV holds real usage. */
  settled(): Promise<void>;
  /** Gives back the shares and stops the timer. */
  close(): Promise<void>;
  /** Writes debts and gives back expired shares now; the instance's timer does it every `sweepMs`. */
  sweep(): Promise<void>;
  /** The KV work the shares did, for the metrics. */
  stats(): ShareStats;
  /**
   * Refuses, as a request over budget is refused, a batch whose largest possible `cost` (pico-units) does not fit
   * the cost budgets of its token and group; nothing stays taken, since each request is charged when its result is in.
   */
  checkCost(exchange: Exchange, principal: Principal, cost: bigint): Promise<void>;
  /** Counts a request that reserved nothing beforehand (one of a provider's batch) against its token's and group's limits. */
  charge(exchange: Exchange, principal: Principal): void;
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
  /** How the shares are sized and kept; defaults in access/share_size.ts. */
  shares?: Partial<ShareSettings>;
  /** How often debts are written and expired shares given back; 0 leaves it to the caller's `sweep()`. */
  sweepMs?: number;
}

/** What a request reserves on each kind of counter. */
type Amounts = Record<Unit, bigint>;

/** The units only requests to /mcp count in. */
const MCP_UNITS: ReadonlySet<Unit> = new Set(["tool_calls", "mcp_requests"]);

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
        counter: {
          key: ["limit", scope, id, unit, window, windowId],
          limit: unit === "cost" ? picoOf(limit) : BigInt(limit),
          windowEnd: end,
        },
        who: `${scope === "token" ? "API key" : "Group"} "${id}"`,
        field,
        unit,
        amount: amounts[unit],
      });
    }
  }
  return slots;
}

/** The 429 for a slot with no room; its message names the limit, never what others used of it. */
function refusal(slot: Slot, used: bigint, exchange: Exchange, options: LimiterOptions): GatewayError {
  const now = options.now();
  const { limit, windowEnd } = slot.counter;
  const breach: Breach = { unit: slot.unit, limit: Number(limit), used: Number(used), resetAt: windowEnd };
  const currency = options.currency ?? "USD";
  const what = slot.unit === "cost"
    ? `budget ${slot.field} = ${formatMoney(limit)} ${currency} (this request is estimated at ${
      formatMoney(slot.amount)
    } ${currency})`
    : `limit ${slot.field} = ${limit}${slot.unit === "tokens" ? ` (this request may use up to ${slot.amount})` : ""}`;
  return new GatewayError(
    "rate_limit",
    `${slot.who} is over its ${what}; it resets at ${new Date(windowEnd).toISOString()}`,
    { headers: rateLimitHeaders(breach, exchange.protocol, now) },
  );
}

/** The limits observer over `kv`. */
export function createLimiter(kv: Deno.Kv, options: LimiterOptions): Limiter {
  const shares = createShares(kv, { now: options.now, writes: options.writes, settings: options.shares });
  // Keyed by the exchange itself: a request id is client input, and two requests may share one.
  const reserved = new Map<Exchange, { slots: Slot[]; estimate: Amounts }>();
  let sweeping: Promise<void> = Promise.resolve();
  // A write the store would not take is logged and counted by the writer and kept for the next sweep; nothing else
  // may stop the chain (or reach the timer as an unhandled rejection).
  const sweep = () => (sweeping = sweeping.then(() => shares.sweep()).catch(() => {}));
  const timer = options.sweepMs ? setInterval(sweep, options.sweepMs) : undefined;
  // The timer must not keep a finished process (a CLI command, a test) alive.
  if (timer !== undefined) Deno.unrefTimer(timer);

  async function check(exchange: Exchange, body: JsonObject, principal: Principal): Promise<void> {
    // Counting tokens is free upstream and uses no model capacity, so it is neither limited nor charged.
    if (exchange.route === COUNT_TOKENS_ROUTE) return;
    const { token, group } = principal;
    // Most tokens have no limits; they cost neither an estimate of the body nor a KV call.
    if (!hasLimits(token.limits) && !hasLimits(group.limits)) return;
    // A request to /mcp is admitted on arrival against the /mcp request limits, and a tool call once more when it is
    // routed to its server (its exchange names the server then) against the tool-call limits; a model call counts
    // against all the others.
    const mcp: Unit | undefined = exchange.protocol !== "mcp"
      ? undefined
      : exchange.mcp?.method === "tools/call" && exchange.mcp.server !== undefined
      ? "tool_calls"
      : "mcp_requests";
    const tokens = mcp ? { prompt: 0, output: 0 } : estimateRequest(body);
    const estimate: Amounts = {
      requests: 1n,
      tokens: BigInt(tokens.prompt + tokens.output),
      cost: mcp ? 0n : estimateCost(tokens, exchange.model ? options.prices?.get(exchange.model) : undefined),
      tool_calls: 1n,
      mcp_requests: 1n,
    };
    const slots = slotsFor(
      [
        { scope: "token", id: token.id, limits: token.limits },
        { scope: "group", id: token.group, limits: group.limits },
      ],
      estimate,
      options.now(),
    ).filter((slot) => mcp ? slot.unit === mcp : !MCP_UNITS.has(slot.unit));
    if (slots.length === 0) return;
    let refused: NoRoom | undefined;
    try {
      refused = await shares.take(slots.map((slot) => ({ counter: slot.counter, amount: slot.amount })));
    } catch (err) {
      if (!(err instanceof KvWriteFailed)) throw err;
      throw new GatewayError("unavailable", "The rate limits of this API key cannot be checked right now; try again", {
        headers: { "retry-after": "1" },
        cause: err,
      });
    }
    if (refused) {
      throw refusal(slots[refused.index], refused.used, exchange, options);
    }
    // Requests of both kinds and tool calls are counted as they are admitted; tokens and cost are settled once known.
    const held = slots.filter((slot) => slot.unit === "tokens" || slot.unit === "cost");
    if (held.length > 0) reserved.set(exchange, { slots: held, estimate });
  }

  async function settled(): Promise<void> {
    await sweeping;
    await shares.returnAll();
  }

  function scopes(principal: Principal) {
    const { token, group } = principal;
    return [
      { scope: "token" as const, id: token.id, limits: token.limits },
      { scope: "group" as const, id: token.group, limits: group.limits },
    ];
  }

  async function checkCost(exchange: Exchange, principal: Principal, cost: bigint): Promise<void> {
    const amounts: Amounts = { requests: 0n, tokens: 0n, cost, tool_calls: 0n, mcp_requests: 0n };
    const slots = slotsFor(scopes(principal), amounts, options.now()).filter((slot) => slot.unit === "cost");
    // An idle window admits one request past the whole budget (so none is refused for good); a batch is not one
    // request, and one larger than the budget never fits.
    const over = slots.find((slot) => slot.amount > slot.counter.limit);
    if (over) throw refusal(over, 0n, exchange, options);
    if (slots.length === 0) return;
    const refused = await shares.take(slots.map((slot) => ({ counter: slot.counter, amount: slot.amount })));
    if (refused) throw refusal(slots[refused.index], refused.used, exchange, options);
    for (const slot of slots) shares.settle(slot.counter, slot.amount);
  }

  return {
    check,
    checkCost,
    charge(exchange, principal) {
      const { usage } = exchange;
      if (!usage) return;
      const used: Amounts = {
        requests: 0n,
        tokens: BigInt(totalTokens(usage)),
        cost: costOf(usage, exchange.price),
        tool_calls: 0n,
        mcp_requests: 0n,
      };
      for (const slot of slotsFor(scopes(principal), used, options.now())) {
        if (slot.unit === "tokens" || slot.unit === "cost") shares.settle(slot.counter, -slot.amount);
      }
    },
    finish(exchange) {
      const held = reserved.get(exchange);
      if (!held) return;
      reserved.delete(exchange);
      // A delivered answer whose usage is unknown (an OpenAI stream without include_usage) keeps its estimate;
      // a failed one gives it back. Cost is priced at the deployment that answered.
      const { usage } = exchange;
      const used: Amounts = usage
        ? {
          requests: 1n,
          tokens: BigInt(totalTokens(usage)),
          cost: costOf(usage, exchange.price),
          tool_calls: 1n,
          mcp_requests: 1n,
        }
        : exchange.status < 400
        ? held.estimate
        : { requests: 1n, tokens: 0n, cost: 0n, tool_calls: 1n, mcp_requests: 1n };
      for (const slot of held.slots) shares.settle(slot.counter, slot.amount - used[slot.unit]);
    },
    settled,
    async close() {
      clearInterval(timer);
      await settled();
    },
    sweep,
    stats: shares.stats,
  };
}

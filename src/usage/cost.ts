/**
 * @module What a request costs: each of its four token kinds at its deployment's price, exactly, in pico-units;
 * whether its tokens were left unpriced; and the highest price of each model, which a budget's estimate uses
 * before it is known which deployment will answer.
 */
import type { Config } from "../core/config.ts";
import type { Exchange, Usage } from "../core/exchange.ts";
import { picoPerToken, type Price } from "../core/money.ts";

/** The price fields, each paired with the usage field it prices. */
const KINDS = [
  ["input", "input_tokens"],
  ["output", "output_tokens"],
  ["cache_read", "cache_read_input_tokens"],
  ["cache_write", "cache_creation_input_tokens"],
] as const satisfies readonly (readonly [keyof Price, keyof Usage])[];

function whole(tokens: number): bigint {
  return BigInt(Number.isFinite(tokens) && tokens > 0 ? Math.trunc(tokens) : 0);
}

/** The cost of `usage` at `price` in pico-units: every token kind times its own rate; no price costs nothing. */
export function costOf(usage: Usage | undefined, price: Price | undefined): bigint {
  if (!usage || !price) return 0n;
  let pico = 0n;
  for (const [field, tokens] of KINDS) pico += whole(usage[tokens]) * picoPerToken(price[field]);
  return pico;
}

/** True when the exchange used tokens on a deployment without a price: its cost of 0 leaves those tokens out. */
export function isUnpriced(exchange: Exchange): boolean {
  const usage = exchange.usage;
  if (exchange.price !== undefined || !usage) return false;
  return KINDS.some(([, tokens]) => usage[tokens] > 0);
}

/** A request's tokens as estimated before the call: its prompt, and the output it may ask for. */
export interface TokenEstimate {
  prompt: number;
  output: number;
}

/** What a request may cost at most, as a budget reserves it: the prompt at the input rate, the output cap at the
 * output rate. Cache reads and writes are not known in advance; the real cost replaces the estimate after the call. */
export function estimateCost(estimate: TokenEstimate, price: Price | undefined): bigint {
  if (!price) return 0n;
  return whole(estimate.prompt) * picoPerToken(price.input) + whole(estimate.output) * picoPerToken(price.output);
}

/** Per public model, the highest rate of each kind among its deployments: the request may reach any of them. */
export function highestPrices(config: Config): Map<string, Price> {
  const prices = new Map<string, Price>();
  for (const upstream of config.upstreams) {
    for (const entry of upstream.models) {
      if (typeof entry === "string" || !entry.price) continue;
      const highest: Price = { ...prices.get(entry.id) };
      for (const [field] of KINDS) {
        const rate = entry.price[field];
        if (rate !== undefined && rate > (highest[field] ?? -1)) highest[field] = rate;
      }
      prices.set(entry.id, highest);
    }
  }
  return prices;
}

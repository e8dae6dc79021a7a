/**
 * @module Amounts of money as exact integers: prices per million tokens and budgets, checked to six decimal places,
 * held as pico-units (10^-12 of the currency) in bigints, and written back as exact decimal strings.
 */
import { z } from "zod";

/** Pico-units in one micro-unit: a price per million tokens in micro-units is the price of one token in pico-units. */
const PICO_PER_MICRO = 1_000_000n;
const PICO_PER_UNIT = 1_000_000_000_000n;

/** True when `value` is written with at most six decimal places (0.000001 is the finest step). */
function sixDecimals(value: number): boolean {
  const micro = Math.round(value * 1e6);
  return Number.isSafeInteger(micro) && micro / 1e6 === value;
}

/** A non-negative amount with at most six decimals and at most `max`; strings and other types are refused. */
function amount(max: number) {
  return z.number().min(0).max(max).refine(sixDecimals, "must have at most 6 decimal places");
}

/**
 * A price per million tokens of each kind; a kind left out is free. Six decimals per million tokens make every
 * token's price a whole number of pico-units, so no request's cost is ever rounded.
 */
export const PriceSchema = z.strictObject({
  input: amount(1_000_000).optional(),
  output: amount(1_000_000).optional(),
  cache_read: amount(1_000_000).optional(),
  cache_write: amount(1_000_000).optional(),
  /** Input and output in a provider's batch (its half price when these are left out). */
  batch_input: amount(1_000_000).optional(),
  batch_output: amount(1_000_000).optional(),
});

/** A deployment's price per million tokens, in the config's currency. */
export type Price = z.infer<typeof PriceSchema>;

/** A budget in the config's currency: more than zero, at most ten million (its pico-units fit an unsigned 64 bits). */
export const BudgetSchema = amount(10_000_000).refine((value) => value > 0, "must be more than 0");

/** Pico-units of a whole amount such as a budget. */
export function picoOf(value: number): bigint {
  return BigInt(Math.round(value * 1e6)) * PICO_PER_MICRO;
}

/** Pico-units that one token costs at `perMillion` (a price per million tokens). */
export function picoPerToken(perMillion: number | undefined): bigint {
  return BigInt(Math.round((perMillion ?? 0) * 1e6));
}

/** An exact decimal string of `pico` pico-units, without trailing zeros: 8400000000n is "0.0084". */
export function formatMoney(pico: bigint): string {
  const sign = pico < 0n ? "-" : "";
  const abs = pico < 0n ? -pico : pico;
  const fraction = (abs % PICO_PER_UNIT).toString().padStart(12, "0").replace(/0+$/, "");
  return `${sign}${abs / PICO_PER_UNIT}${fraction ? `.${fraction}` : ""}`;
}

/** The pico-units of a decimal string that {@linkcode formatMoney} wrote; undefined for anything else. */
export function parseMoney(text: string): bigint | undefined {
  const match = /^(\d+)(?:\.(\d{1,12}))?$/.exec(text);
  if (!match) return undefined;
  return BigInt(match[1]) * PICO_PER_UNIT + BigInt((match[2] ?? "").padEnd(12, "0"));
}

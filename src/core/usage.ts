/**
 * @module Token counts independent of the wire shape, and the checks every count goes through: what is recorded and
 * billed (the usage meter) and what a translated answer shows the client (the translators) come from the same
 * arithmetic. Each protocol's own reading of its usage is that protocol's (src/protocols/).
 */
import type { Usage as ExchangeUsage } from "./exchange.ts";
import { isObject } from "./types.ts";

/** Token counts independent of the wire shape; `input` excludes cache reads and writes. */
export interface TokenCounts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

/** No tokens counted yet. */
export const NO_USAGE: TokenCounts = Object.freeze({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });

/**
 * The most tokens one count of one answer may hold: hundreds of times the largest context window there is, so no
 * real answer comes near it, while a count past it (1e20, 2^53) would make sums and costs that KV's 64-bit counters
 * cannot hold (see docs/spend.md, "Usage an upstream reports").
 */
export const MAX_TOKEN_COUNT = 1_000_000_000;

/** True when `value` is a number that a count cannot be: past {@linkcode MAX_TOKEN_COUNT}, or not finite. */
function absurd(value: unknown): boolean {
  return typeof value === "number" && !(value <= MAX_TOKEN_COUNT);
}

/**
 * A count as a non-negative integer; anything else counts as 0, a number past {@linkcode MAX_TOKEN_COUNT} too:
 * it says nothing true about the answer, and billing it would charge the token for the upstream's fault.
 */
export function tokenCount(value: unknown): number {
  return typeof value === "number" && !absurd(value) ? Math.max(0, Math.trunc(value)) : 0;
}

/** True when `value`, found under `name`, is a count that {@linkcode tokenCount} has to change or drop. */
function malformed(name: string, value: unknown): boolean {
  if (typeof value === "number") return absurd(value) || value < 0 || !Number.isInteger(value);
  // Usage objects hold other fields too (Anthropic's `service_tier`, Gemini's `trafficType`); only a count's name ends
  // so (Gemini's `usageMetadata` says `promptTokenCount`).
  return (name.endsWith("_tokens") || name.endsWith("TokenCount")) && value !== null && value !== undefined;
}

/**
 * The paths of the counts in an upstream's `usage` object (and the objects it nests, such as
 * `prompt_tokens_details`) that {@linkcode tokenCount} cuts or drops: past the bound, negative, fractional or not a
 * number. The reader names the upstream that sent them.
 */
export function invalidCounts(usage: unknown): string[] {
  if (!isObject(usage)) return [];
  const found: string[] = [];
  for (const [name, value] of Object.entries(usage)) {
    if (isObject(value)) {
      for (const [inner, count] of Object.entries(value)) if (malformed(inner, count)) found.push(`${name}.${inner}`);
    } else if (malformed(name, value)) found.push(name);
  }
  return found;
}

/** `counts` with a recorded usage added to them: what an answer reports when it also stands for an earlier call. */
export function withRecorded(counts: TokenCounts, usage: ExchangeUsage | undefined): TokenCounts {
  if (!usage) return counts;
  return {
    input: counts.input + usage.input_tokens,
    output: counts.output + usage.output_tokens,
    cacheRead: counts.cacheRead + usage.cache_read_input_tokens,
    cacheWrite: counts.cacheWrite + usage.cache_creation_input_tokens,
    reasoning: counts.reasoning,
  };
}

/** The counts as an exchange records them (Anthropic's field names; the prompt is the sum of the first three). */
export function recordedUsage(counts: TokenCounts): ExchangeUsage {
  const usage: ExchangeUsage = {
    input_tokens: counts.input,
    output_tokens: counts.output,
    cache_read_input_tokens: counts.cacheRead,
    cache_creation_input_tokens: counts.cacheWrite,
  };
  if (counts.reasoning > 0) usage.reasoning_output_tokens = counts.reasoning;
  return usage;
}

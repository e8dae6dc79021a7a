/**
 * @module The one reading of each upstream protocol's token usage: what is recorded and billed (the usage meter) and
 * what a translated answer shows the client (the translators) come from the same arithmetic.
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

/** A count as a non-negative integer; anything else counts as 0. */
export function tokenCount(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? Math.max(0, Math.trunc(value)) : 0;
}

/**
 * Reads an OpenAI chat `usage`. Its `prompt_tokens` includes cached tokens, and some compatible servers report cache
 * writes beside the reads (as `prompt_tokens_details.cache_creation_tokens` or `cache_creation_input_tokens`), also
 * part of the prompt: both are taken out of `input`, so each prompt token is counted once, as what it was.
 */
export function usageFromChat(usage: unknown): TokenCounts {
  const u = isObject(usage) ? usage : {};
  const prompt = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const completion = isObject(u.completion_tokens_details) ? u.completion_tokens_details : {};
  const total = tokenCount(u.prompt_tokens);
  const cacheRead = tokenCount(prompt.cached_tokens);
  // Writes are priced at their own rate, so they must not count more tokens than the prompt has left.
  const cacheWrite = Math.min(
    Math.max(0, total - cacheRead),
    tokenCount(prompt.cache_creation_tokens ?? u.cache_creation_input_tokens),
  );
  return {
    input: Math.max(0, total - cacheRead - cacheWrite),
    output: tokenCount(u.completion_tokens),
    cacheRead,
    cacheWrite,
    reasoning: tokenCount(completion.reasoning_tokens),
  };
}

/** Reads an Anthropic `usage` (input is already net of cache). */
export function usageFromAnthropic(usage: unknown): TokenCounts {
  const u = isObject(usage) ? usage : {};
  return {
    input: tokenCount(u.input_tokens),
    output: tokenCount(u.output_tokens),
    cacheRead: tokenCount(u.cache_read_input_tokens),
    cacheWrite: tokenCount(u.cache_creation_input_tokens),
    reasoning: 0,
  };
}

/** Anthropic stream usage is cumulative: the fields a `message_delta` carries replace earlier values. */
export function mergeAnthropicUsage(previous: TokenCounts, usage: unknown): TokenCounts {
  if (!isObject(usage)) return previous;
  const late = usageFromAnthropic(usage);
  return {
    input: "input_tokens" in usage ? late.input : previous.input,
    output: "output_tokens" in usage ? late.output : previous.output,
    cacheRead: "cache_read_input_tokens" in usage ? late.cacheRead : previous.cacheRead,
    cacheWrite: "cache_creation_input_tokens" in usage ? late.cacheWrite : previous.cacheWrite,
    reasoning: previous.reasoning,
  };
}

/** The counts as an exchange records them (Anthropic's field names; the prompt is the sum of the first three). */
export function recordedUsage(counts: TokenCounts): ExchangeUsage {
  return {
    input_tokens: counts.input,
    output_tokens: counts.output,
    cache_read_input_tokens: counts.cacheRead,
    cache_creation_input_tokens: counts.cacheWrite,
  };
}

/**
 * @module Limits as enforced: what each field counts, the fixed UTC windows they count in, the token estimate a
 * request reserves before its call, and the rate-limit headers of each client protocol (the schema is in core/config).
 */
import type { Limits } from "../core/config.ts";
import type { Usage } from "../core/exchange.ts";
import { isObject, type JsonObject, type Protocol } from "../core/types.ts";
import { estimatePromptTokens } from "../core/estimate.ts";

/** A counting window; every window is aligned to UTC. */
export type Window = "minute" | "day" | "month";

/** What one limit counts and over which window, keyed by its field name. */
export const LIMIT_FIELDS: Record<keyof Limits, { unit: "requests" | "tokens"; window: Window }> = {
  requests_per_minute: { unit: "requests", window: "minute" },
  tokens_per_minute: { unit: "tokens", window: "minute" },
  tokens_per_day: { unit: "tokens", window: "day" },
  tokens_per_month: { unit: "tokens", window: "month" },
};

/** The window containing `at`: its id (part of a KV key) and its start and end in epoch milliseconds. */
export function windowOf(window: Window, at: number): { id: string; start: number; end: number } {
  const d = new Date(at);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (window === "month") {
    return { id: d.toISOString().slice(0, 7), start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
  }
  if (window === "day") {
    const start = Date.UTC(y, m, d.getUTCDate());
    return { id: d.toISOString().slice(0, 10), start, end: start + 86_400_000 };
  }
  const start = at - (at % 60_000);
  return { id: d.toISOString().slice(0, 16), start, end: start + 60_000 };
}

/** Every token the request used or read: fresh input, output and both cache kinds. */
export function totalTokens(usage: Usage | undefined): number {
  if (!usage) return 0;
  return usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens +
    usage.cache_creation_input_tokens;
}

/**
 * What a request may use at most, reserved against token limits before the call: about four characters per
 * prompt token plus the output cap the client asked for. The real usage replaces it after the call.
 */
export function estimateRequestTokens(body: JsonObject): number {
  const cap = [body.max_tokens, body.max_completion_tokens, body.max_output_tokens]
    .find((value) => typeof value === "number" && Number.isFinite(value) && value > 0) as number | undefined;
  return estimatePromptTokens(body) + Math.ceil(cap ?? 0);
}

/** Limits with no field set count as none. */
export function hasLimits(limits: unknown): limits is Limits {
  return isObject(limits) && Object.values(limits).some((value) => typeof value === "number");
}

/** A limit a request ran into, for the 429's message and headers. */
export interface Breach {
  unit: "requests" | "tokens";
  limit: number;
  used: number;
  /** Epoch milliseconds when the window ends. */
  resetAt: number;
}

/** The headers of a 429: `retry-after` and the client protocol's own rate-limit headers. */
export function rateLimitHeaders(breach: Breach, protocol: Protocol, now: number): Record<string, string> {
  const seconds = Math.max(1, Math.ceil((breach.resetAt - now) / 1000));
  const remaining = String(Math.max(0, breach.limit - breach.used));
  if (protocol === "anthropic") {
    const prefix = `anthropic-ratelimit-${breach.unit}`;
    return {
      "retry-after": String(seconds),
      [`${prefix}-limit`]: String(breach.limit),
      [`${prefix}-remaining`]: remaining,
      [`${prefix}-reset`]: new Date(breach.resetAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
    };
  }
  return {
    "retry-after": String(seconds),
    [`x-ratelimit-limit-${breach.unit}`]: String(breach.limit),
    [`x-ratelimit-remaining-${breach.unit}`]: remaining,
    [`x-ratelimit-reset-${breach.unit}`]: `${seconds}s`,
  };
}

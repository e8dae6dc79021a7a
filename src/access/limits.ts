/**
 * @module Limits as enforced: what each field counts, the fixed UTC windows they count in, the estimate a request
 * reserves before its call, and the rate-limit headers of each client protocol (the schema is in core/config).
 */
import type { Limits } from "../core/config.ts";
import { estimatePromptTokens } from "../core/estimate.ts";
import type { Usage } from "../core/exchange.ts";
import { isObject, type JsonObject, type ServedProtocol } from "../core/types.ts";
import type { TokenEstimate } from "../usage/cost.ts";

/** A counting window; every window is aligned to UTC. */
export type Window = "minute" | "day" | "month";

/** What a limit counts: model requests, tokens, cost in the config's currency, calls of MCP tools, requests to /mcp. */
export type Unit = "requests" | "tokens" | "cost" | "tool_calls" | "mcp_requests";

/** What one limit counts and over which window, keyed by its field name. */
export const LIMIT_FIELDS: Record<keyof Limits, { unit: Unit; window: Window }> = {
  requests_per_minute: { unit: "requests", window: "minute" },
  tokens_per_minute: { unit: "tokens", window: "minute" },
  tokens_per_day: { unit: "tokens", window: "day" },
  tokens_per_month: { unit: "tokens", window: "month" },
  cost_per_day: { unit: "cost", window: "day" },
  cost_per_month: { unit: "cost", window: "month" },
  tool_calls_per_minute: { unit: "tool_calls", window: "minute" },
  mcp_requests_per_minute: { unit: "mcp_requests", window: "minute" },
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
 * What a request may use, reserved against limits before the call: about four characters per prompt token, and
 * the output cap the client asked for (a Gemini client asks in `generationConfig.maxOutputTokens`). The real usage
 * replaces it after the call.
 */
export function estimateRequest(body: JsonObject): TokenEstimate {
  const gemini = isObject(body.generationConfig) ? body.generationConfig.maxOutputTokens : undefined;
  const cap = [body.max_tokens, body.max_completion_tokens, body.max_output_tokens, gemini]
    .find((value) => typeof value === "number" && Number.isFinite(value) && value > 0) as number | undefined;
  return { prompt: estimatePromptTokens(body), output: Math.ceil(cap ?? 0) };
}

/** The tokens a request reserves against token limits: its estimated prompt plus its output cap. */
export function estimateRequestTokens(body: JsonObject): number {
  const { prompt, output } = estimateRequest(body);
  return prompt + output;
}

/** Limits with no field set count as none. */
export function hasLimits(limits: unknown): limits is Limits {
  return isObject(limits) && Object.values(limits).some((value) => typeof value === "number");
}

/** A limit a request ran into, for the 429's message and headers. */
export interface Breach {
  unit: Unit;
  limit: number;
  used: number;
  /** Epoch milliseconds when the window ends. */
  resetAt: number;
}

/**
 * The headers of a 429: `retry-after`, and the client protocol's own rate-limit headers for requests and tokens
 * (no protocol has any for money, and a group's remaining budget would tell one token what others spent).
 * A window that ends more than a minute away also gets `x-should-retry: false`: the SDKs would otherwise retry in
 * vain, or (the Anthropic SDK) sleep until the window ends.
 */
export function rateLimitHeaders(breach: Breach, protocol: ServedProtocol, now: number): Record<string, string> {
  const seconds = Math.max(1, Math.ceil((breach.resetAt - now) / 1000));
  const retry: Record<string, string> = { "retry-after": String(seconds) };
  if (seconds > 60) retry["x-should-retry"] = "false";
  if (breach.unit === "cost") return retry;
  const remaining = String(Math.max(0, breach.limit - breach.used));
  if (protocol === "anthropic") {
    const prefix = `anthropic-ratelimit-${breach.unit}`;
    return {
      ...retry,
      [`${prefix}-limit`]: String(breach.limit),
      [`${prefix}-remaining`]: remaining,
      [`${prefix}-reset`]: new Date(breach.resetAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
    };
  }
  return {
    ...retry,
    [`x-ratelimit-limit-${breach.unit}`]: String(breach.limit),
    [`x-ratelimit-remaining-${breach.unit}`]: remaining,
    [`x-ratelimit-reset-${breach.unit}`]: `${seconds}s`,
  };
}

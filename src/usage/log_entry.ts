/**
 * @module What the usage recorder writes of one finished request: its request-log entry (no prompt or completion
 * text), the counters it adds to the per-day aggregates, and the KV keys of both.
 */
import type { GuardHit } from "../core/text_scan.ts";
import type { Exchange } from "../core/exchange.ts";
import { formatMoney, parseMoney } from "../core/money.ts";
import { costOf, isUnpriced } from "./cost.ts";

/** One request as the log keeps it. */
export interface RequestLogEntry {
  request_id: string;
  time: string;
  token_id: string;
  /** The person the token belongs to (an email); null for a token without an owner. */
  owner: string | null;
  group: string | null;
  /** The public model; null when the request named none its group enables (it was refused with a 400 or 404). */
  model: string | null;
  /** With `model`, the deployment that served the request (the last one tried, when none did). */
  upstream: string | null;
  /** How the session's pin turned out (`kept`, `made`, `moved`); null when the request had no session pin. */
  affinity: string | null;
  protocol: string;
  route: string;
  stream: boolean;
  /** "websocket" for a response made on a Responses socket; absent for an HTTP request. */
  transport?: "websocket";
  status: number;
  error: string | null;
  duration_ms: number | null;
  ttfb_ms: number | null;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Of `output_tokens`, those spent reasoning; absent when the upstream reported none. */
  reasoning_output_tokens?: number;
  /** False when the stream was cut or failed before its usage was final: the counts are what was seen. */
  usage_complete: boolean;
  session_id: string | null;
  /** What the tokens cost at the deployment's price, as an exact decimal string in the config's currency. */
  cost: string;
  /** True when tokens were used on a deployment without a price, so `cost` (then "0") leaves them out. */
  unpriced: boolean;
  /** Set for a call of an MCP tool (route /mcp), which has no model: what was called and how it went. */
  tool?: ToolCallEntry;
  /** Set for an embeddings request (OpenAI's or Gemini's shape): how many inputs and the vector length asked, no text. */
  embeddings?: { inputs: number; dimensions?: number };
  /** The guardrails' hits: per rule, kind, action and scope, how many matches; never the matched text. */
  guardrails?: GuardHit[];
}

/** A call of an MCP tool as the log keeps it: never its arguments or its result. */
export interface ToolCallEntry {
  /** The server it went to; null when the call was refused before one was known. */
  server: string | null;
  /** The tool's own name on that server; null when refused before it was found. */
  name: string | null;
  /** ok, tool_error (the tool reported a failure), refused, rate_limited, timeout, unavailable, ... */
  outcome: string;
  request_bytes: number;
  response_bytes: number;
}

/** The dimensions usage is aggregated by, each per UTC day; `server` and `tool` (`server/tool`) count MCP calls. */
export const DIMENSIONS = ["token", "group", "model", "session", "server", "tool"] as const;
/** One aggregation dimension. */
export type Dimension = typeof DIMENSIONS[number];

/** The counters of each aggregate. */
export const COUNTERS = [
  "requests",
  "errors",
  "incomplete",
  "input_tokens",
  "output_tokens",
  "cache_read_input_tokens",
  "cache_creation_input_tokens",
  "unpriced",
  /** In pico-units (10^-12 of the currency), so sums of any number of requests stay exact. */
  "cost",
  /** Calls of MCP tools through /mcp, and those that did not end well (refused, failed, or the tool's own error). */
  "tool_calls",
  "tool_errors",
] as const;
/** One aggregate counter. */
export type Counter = typeof COUNTERS[number];

/** KV key of one aggregate counter: ["usage", dimension, day, name, counter]. */
export function usageKey(dimension: Dimension, day: string, name: string, counter: Counter): Deno.KvKey {
  return ["usage", dimension, day, name, counter];
}

/** KV key of one log entry, ordered by time: ["request_log", started_at, request_id]. */
export function logKey(startedAt: number, requestId: string): Deno.KvKey {
  return ["request_log", startedAt, requestId];
}

/** The log's filters that have an index, so a filtered read touches only matching entries. */
const LOG_INDEXES = ["token", "owner", "model", "session", "status"] as const;
/** One indexed filter of the log. */
export type LogIndex = typeof LOG_INDEXES[number];

/**
 * KV key of one index entry: ["request_log_by", index, value, started_at, request_id], naming that entry; its value lists
 * the entries the key stands for (src/usage/log_index.ts), or is null for the entry alone (as earlier versions wrote).
 */
export function logIndexKey(index: LogIndex, value: string | number, startedAt: number, requestId: string): Deno.KvKey {
  return ["request_log_by", index, value, startedAt, requestId];
}

/** Where the time of the first indexed entry is kept: entries before it (written before the indexes) are scanned. */
export const LOG_INDEXED_SINCE: Deno.KvKey = ["request_log_indexed_since"];

/** The token-counting route: free upstream, so neither recorded nor limited. */
export const COUNT_TOKENS_ROUTE = "/v1/messages/count_tokens";

/**
 * The routes of model calls, which are recorded whether they reach an upstream or are refused before; a request of a
 * batch is recorded under its batch's route.
 */
const MODEL_ROUTES = new Set([
  "/v1/messages",
  "/v1/chat/completions",
  "/v1/responses",
  "/v1/messages/batches",
  "/v1/batches",
  // The Gemini API's generations, under each version its clients call (see handlers/gemini.ts).
  ...["/v1beta", "/v1alpha", "/v1"].flatMap((version) =>
    ["generateContent", "streamGenerateContent"].map((action) => `${version}/models/:id:${action}`)
  ),
]);

/** True for the exchange of a call of an MCP tool. */
export function isToolCall(exchange: Exchange): boolean {
  return exchange.route === "/mcp" && exchange.mcp?.method === "tools/call";
}

/** The log entry of a finished exchange, or undefined for requests that are neither model nor tool calls by a token. */
export function toLogEntry(exchange: Exchange): RequestLogEntry | undefined {
  if (!exchange.token_id) return undefined;
  const toolCall = isToolCall(exchange);
  // An embeddings request is a model request under either shape's route (the Gemini API's names the model in its path).
  if (!toolCall && !MODEL_ROUTES.has(exchange.route) && !exchange.embeddings) return undefined;
  const usage = exchange.usage;
  const entry: RequestLogEntry = {
    request_id: exchange.request_id,
    time: new Date(exchange.started_at).toISOString(),
    token_id: exchange.token_id,
    owner: exchange.owner ?? null,
    group: exchange.group ?? null,
    model: exchange.model ?? null,
    upstream: exchange.upstream ?? null,
    affinity: exchange.affinity ?? null,
    protocol: exchange.protocol,
    route: exchange.route,
    stream: exchange.stream,
    ...exchange.transport === "websocket" ? { transport: "websocket" as const } : {},
    status: exchange.status,
    error: exchange.error ?? null,
    duration_ms: exchange.duration_ms ?? null,
    ttfb_ms: exchange.ttfb_ms ?? null,
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cache_read_input_tokens: usage?.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: usage?.cache_creation_input_tokens ?? 0,
    ...usage?.reasoning_output_tokens ? { reasoning_output_tokens: usage.reasoning_output_tokens } : {},
    usage_complete: usage !== undefined && exchange.usage_complete !== false,
    session_id: exchange.session_id ?? null,
    cost: formatMoney(costOf(usage, exchange.price)),
    unpriced: isUnpriced(exchange),
  };
  if (exchange.embeddings) entry.embeddings = { ...exchange.embeddings };
  if (exchange.guardrails?.length) entry.guardrails = exchange.guardrails.map((hit) => ({ ...hit }));
  if (toolCall) {
    const mcp = exchange.mcp!;
    entry.tool = {
      server: mcp.server ?? null,
      name: mcp.name ?? null,
      outcome: mcp.outcome ?? (exchange.status === 499 ? "client_closed" : "invalid"),
      request_bytes: mcp.request_bytes ?? 0,
      response_bytes: mcp.response_bytes ?? 0,
    };
  }
  return entry;
}

/** The names a log entry is aggregated under, per dimension (null: not under that one). */
export function namesOf(entry: RequestLogEntry): Record<Dimension, string | null> {
  const server = entry.tool?.server ?? null;
  const tool = server !== null && entry.tool?.name ? `${server}/${entry.tool.name}` : null;
  return { token: entry.token_id, group: entry.group, model: entry.model, session: entry.session_id, server, tool };
}

/** The counters one log entry adds. */
export function countersOf(entry: RequestLogEntry): Record<Counter, bigint> {
  // A client's own cancellation (499, client_closed) is not an error of the gateway's or the upstream's.
  const failed = entry.error !== "client_closed" && (entry.status >= 400 || entry.error !== null);
  if (entry.tool) {
    // A tool call is not a model request: it counts only as a call, and as an error when it did not end well.
    const counts = Object.fromEntries(COUNTERS.map((counter) => [counter, 0n])) as Record<Counter, bigint>;
    counts.tool_calls = 1n;
    counts.tool_errors = entry.tool.outcome !== "ok" && entry.tool.outcome !== "client_closed" ? 1n : 0n;
    return counts;
  }
  return {
    requests: 1n,
    errors: failed ? 1n : 0n,
    // A stream that started (200) but was cut or failed: its token counts are only what was seen.
    incomplete: entry.status < 400 && !entry.usage_complete ? 1n : 0n,
    input_tokens: BigInt(entry.input_tokens),
    output_tokens: BigInt(entry.output_tokens),
    cache_read_input_tokens: BigInt(entry.cache_read_input_tokens),
    cache_creation_input_tokens: BigInt(entry.cache_creation_input_tokens),
    unpriced: entry.unpriced ? 1n : 0n,
    cost: parseMoney(entry.cost) ?? 0n,
    tool_calls: 0n,
    tool_errors: 0n,
  };
}

/**
 * @module The attributes of a model call in the OpenTelemetry GenAI conventions and the gateway's own, read from the
 * exchange: pure, so what a span and a metric say is decided in one place and tested without an exporter.
 */
import type { AnswerFacts, Exchange } from "../core/exchange.ts";
import { formatMoney } from "../core/money.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { UpstreamConfig } from "../core/upstream_config.ts";
import { costOf } from "../usage/cost.ts";

/** A span or metric attribute value. Integers are BigInts: Deno exports a JS number as a double, a BigInt as an int. */
export type TraceValue = string | boolean | number | bigint | string[];

/** Attributes by name. */
export type TraceAttributes = Record<string, TraceValue>;

/** The operation the gateway's generations are, in the conventions' words (messages, chat and responses alike). */
export const OPERATION = "chat";

/** The conventions' operation of an exchange: `embeddings` for an embeddings request, else a generation's. */
export function operationOf(exchange: Exchange): string {
  return exchange.embeddings ? "embeddings" : OPERATION;
}

/** `gen_ai.provider.name` by the upstream's protocol: an OpenAI-compatible service is reached as OpenAI is. */
const PROVIDERS: Record<UpstreamConfig["protocol"], string> = {
  anthropic: "anthropic",
  openai: "openai",
  "openai-responses": "openai",
  "azure-openai": "azure.ai.openai",
  gemini: "gcp.gemini",
  "anthropic-bedrock": "aws.bedrock",
  "anthropic-vertex": "gcp.vertex_ai",
  "gemini-vertex": "gcp.vertex_ai",
  demo: "modelgate.demo",
};

/** An integer attribute. */
export function int(value: number): bigint {
  return BigInt(Number.isFinite(value) ? Math.trunc(value) : 0);
}

/** Where an upstream is: `server.address` and `server.port` of its base URL (the URL's path is never exported). */
export function serverOf(baseUrl: string): TraceAttributes {
  try {
    const url = new URL(baseUrl);
    // The demo upstream's address names no host: it is in the gateway.
    if (!url.hostname) return {};
    const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
    return { "server.address": url.hostname, "server.port": int(port) };
  } catch {
    return {};
  }
}

/** What one attempt's span, and the model span while the attempt runs, say of the upstream. */
export function upstreamAttributes(upstream: UpstreamConfig, passthrough: boolean): TraceAttributes {
  return {
    "gen_ai.provider.name": PROVIDERS[upstream.protocol],
    ...serverOf(upstream.base_url),
    "modelgate.upstream": upstream.name,
    "modelgate.translated": !passthrough,
  };
}

/** The request's settings the conventions name, read from the client's body (numbers only, never text). */
export function requestAttributes(body: JsonObject): TraceAttributes {
  const out: TraceAttributes = {};
  // Gemini's settings sit in its generationConfig, under names of its own.
  const gemini = isObject(body.generationConfig) ? body.generationConfig : {};
  // Messages and Chat say max_tokens (Chat's reasoning models max_completion_tokens), Responses max_output_tokens.
  const max = body.max_tokens ?? body.max_completion_tokens ?? body.max_output_tokens ?? gemini.maxOutputTokens;
  if (typeof max === "number" && Number.isInteger(max)) out["gen_ai.request.max_tokens"] = int(max);
  const temperature = body.temperature ?? gemini.temperature;
  if (typeof temperature === "number") out["gen_ai.request.temperature"] = temperature;
  const topP = body.top_p ?? gemini.topP;
  if (typeof topP === "number") out["gen_ai.request.top_p"] = topP;
  return out;
}

/** What the answer said of itself. */
function answerAttributes(answer: AnswerFacts | undefined): TraceAttributes {
  const out: TraceAttributes = {};
  if (answer?.id) out["gen_ai.response.id"] = answer.id;
  if (answer?.model) out["gen_ai.response.model"] = answer.model;
  if (answer?.finish_reasons) out["gen_ai.response.finish_reasons"] = answer.finish_reasons;
  return out;
}

/** How a stream ended: in full, cut (by the upstream or a limit), or left by its client. */
export function streamEnd(exchange: Exchange): "complete" | "cut" | "client_left" {
  if (exchange.usage_complete) return "complete";
  return exchange.error && exchange.error !== "client_closed" ? "cut" : "client_left";
}

/**
 * The model span's attributes once the exchange is over. The conventions count cache reads and writes within
 * `gen_ai.usage.input_tokens`; the exchange keeps them apart, as Anthropic does, so they are added back here.
 */
export function finalAttributes(exchange: Exchange, currency: string): TraceAttributes {
  const out: TraceAttributes = {
    ...answerAttributes(exchange.answer),
    "modelgate.request_id": exchange.request_id,
    "modelgate.client.protocol": exchange.protocol,
    "modelgate.stream": exchange.stream,
    "modelgate.attempts": int(exchange.attempts.length),
  };
  const usage = exchange.usage;
  if (usage) {
    const prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
    out["gen_ai.usage.input_tokens"] = int(prompt);
    out["gen_ai.usage.output_tokens"] = int(usage.output_tokens);
    out["gen_ai.usage.cache_read.input_tokens"] = int(usage.cache_read_input_tokens);
    out["gen_ai.usage.cache_creation.input_tokens"] = int(usage.cache_creation_input_tokens);
  }
  if (exchange.price && usage) {
    out["modelgate.cost"] = formatMoney(costOf(usage, exchange.price));
    out["modelgate.currency"] = currency;
  }
  // An embeddings request says how many inputs it had and the vector length asked for, never its text.
  if (exchange.embeddings) {
    out["modelgate.embeddings.inputs"] = int(exchange.embeddings.inputs);
    const { dimensions } = exchange.embeddings;
    if (dimensions !== undefined) out["gen_ai.embeddings.dimension.count"] = int(dimensions);
  }
  if (exchange.token_id) out["modelgate.token.id"] = exchange.token_id;
  // The person behind the token, under the OpenTelemetry name for the end user.
  if (exchange.owner) out["enduser.id"] = exchange.owner;
  if (exchange.group) out["modelgate.group"] = exchange.group;
  if (exchange.session_id) out["session.id"] = exchange.session_id;
  if (exchange.affinity) out["modelgate.affinity"] = exchange.affinity;
  if (exchange.stream) out["modelgate.stream.end"] = streamEnd(exchange);
  // What the guardrails did, as `rule:kind:action:scope=count`: never the matched text.
  if (exchange.guardrails?.length) {
    out["modelgate.guardrails"] = exchange.guardrails.map((h) =>
      `${h.rule}:${h.kind}:${h.action}:${h.scope}=${h.count}`
    );
  }
  if (exchange.error) out["error.type"] = exchange.error;
  return out;
}

/** Seconds from the model call's start to the answer's first byte, when the answer streamed. */
export function firstChunkSeconds(exchange: Exchange, callStartedAt: number): number | undefined {
  if (!exchange.stream || exchange.ttfb_ms === undefined || exchange.status !== 200) return undefined;
  return Math.max(0, exchange.started_at + exchange.ttfb_ms - callStartedAt) / 1000;
}

/**
 * The attributes of the GenAI metrics: every value from a bounded set (configured model and upstream names, the
 * upstream's host, error kinds), so client input cannot grow the number of series.
 */
export function metricAttributes(exchange: Exchange, upstream: TraceAttributes | undefined): TraceAttributes {
  const out: TraceAttributes = {
    "gen_ai.operation.name": operationOf(exchange),
    "gen_ai.request.model": exchange.model ?? "other",
  };
  if (upstream) {
    for (const key of ["gen_ai.provider.name", "server.address", "server.port", "modelgate.upstream"]) {
      if (upstream[key] !== undefined) out[key] = upstream[key];
    }
  }
  if (exchange.error) out["error.type"] = exchange.error;
  return out;
}

/**
 * @module OpenTelemetry traces and GenAI metrics of each model call, as an exchange observer: a CLIENT span for the
 * call under the runtime's server span, a child span per upstream attempt (the runtime's fetch span beneath it), all
 * ended with the exchange; and a span per call through /mcp (./mcp_span.ts). Deno exports them itself when `OTEL_DENO=true`; otherwise this observer is not made.
 */
import {
  type Attributes,
  type Context,
  context,
  type Histogram,
  type Meter,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import type { Attempt, Exchange, ExchangeTrace, Observer } from "../core/exchange.ts";
import type { JsonObject } from "../core/types.ts";
import type { UpstreamConfig } from "../core/upstream_config.ts";
import {
  finalAttributes,
  firstChunkSeconds,
  int,
  metricAttributes,
  operationOf,
  requestAttributes,
  type TraceAttributes,
  upstreamAttributes,
} from "./genai.ts";
import { inputContent, outputContent } from "./genai_content.ts";
import { mcpSpan } from "./mcp_span.ts";

/** Options for {@linkcode tracingObserver}. */
export interface TracingOptions {
  tracer: Tracer;
  meter: Meter;
  /** The config's currency, which a span's cost is in. */
  currency: string;
  /** Whether prompt and answer text go on the model span (the operator's opt-in; off by default). */
  captureContent?: boolean;
  /** Epoch milliseconds. */
  now(): number;
}

/** The conventions' histogram buckets: powers of 4 tokens, and seconds doubling from 10 ms. */
const TOKEN_BUCKETS = Array.from({ length: 14 }, (_, i) => 4 ** i);
const SECOND_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** The GenAI client metrics. */
interface Instruments {
  tokens: Histogram;
  duration: Histogram;
  firstChunk: Histogram;
  /** The MCP conventions' `mcp.client.operation.duration`. */
  mcpDuration: Histogram;
}

function instruments(meter: Meter): Instruments {
  const seconds = { unit: "s", advice: { explicitBucketBoundaries: SECOND_BUCKETS } };
  return {
    tokens: meter.createHistogram("gen_ai.client.token.usage", {
      description: "Number of input and output tokens used.",
      unit: "{token}",
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    duration: meter.createHistogram("gen_ai.client.operation.duration", {
      description: "GenAI operation duration.",
      ...seconds,
    }),
    firstChunk: meter.createHistogram("gen_ai.client.operation.time_to_first_chunk", {
      description: "Time to receive the first chunk of a streamed answer.",
      ...seconds,
    }),
    mcpDuration: meter.createHistogram("mcp.client.operation.duration", {
      description: "The duration of the MCP request or notification as observed on the sender.",
      ...seconds,
    }),
  };
}

/** The API's attribute type has no BigInt, which Deno exports as an integer; the values are the conventions' own. */
function attrs(values: TraceAttributes): Attributes {
  return values as unknown as Attributes;
}

/** One request's spans; the exchange holds it as its {@linkcode ExchangeTrace} until the observer's finish. */
interface RequestTrace extends ExchangeTrace {
  end(exchange: Exchange): void;
}

/** The tracing observer: it gives each exchange a trace at its start and ends the spans and records the metrics. */
export function tracingObserver(options: TracingOptions): Observer {
  const meters = instruments(options.meter);
  // Each upstream's attributes are made once (its base URL parsed once), whichever request needs them.
  const made = new Map<string, TraceAttributes>();
  const upstreamOf = (config: UpstreamConfig, passthrough: boolean) => {
    const key = `${passthrough ? "=" : "~"}${config.name}`;
    let found = made.get(key);
    if (!found) made.set(key, found = upstreamAttributes(config, passthrough));
    return found;
  };
  const traceOptions = { ...options, upstreamOf };
  return {
    start(exchange) {
      exchange.trace = requestTrace(exchange, traceOptions, meters);
    },
    finish(exchange) {
      (exchange.trace as RequestTrace | undefined)?.end(exchange);
    },
  };
}

interface TraceOptions extends TracingOptions {
  upstreamOf(config: UpstreamConfig, passthrough: boolean): TraceAttributes;
}

function requestTrace(exchange: Exchange, options: TraceOptions, meters: Instruments): RequestTrace {
  const { tracer } = options;
  // The request runs under the runtime's server span, which already continues a client's `traceparent`.
  const server = trace.getActiveSpan()?.spanContext();
  let model: Span | undefined;
  let modelContext: Context | undefined;
  let calledAt = 0;
  let current: Span | undefined;
  let served: Span | undefined;
  let upstream: TraceAttributes | undefined;

  function end(finished: Exchange): void {
    // A client that left is not the upstream's failure, nor the model call's.
    const failure = finished.error !== "client_closed" ? finished.error : undefined;
    if (served) {
      if (failure) fail(served, failure);
      served.end();
    }
    if (!model) return;
    const firstChunk = firstChunkSeconds(finished, calledAt);
    // A span the sampler left out records nothing, so its attributes are not even made.
    if (model.isRecording()) {
      const final = finalAttributes(finished, options.currency);
      if (upstream) Object.assign(final, upstream);
      if (firstChunk !== undefined) final["gen_ai.response.time_to_first_chunk"] = firstChunk;
      model.setAttributes(attrs(final));
      if (failure) fail(model, failure);
    }
    model.end();
    const labels = attrs(metricAttributes(finished, upstream));
    meters.duration.record((options.now() - calledAt) / 1000, labels);
    if (firstChunk !== undefined) meters.firstChunk.record(firstChunk, labels);
    const usage = finished.usage;
    if (usage) {
      const input = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
      meters.tokens.record(input, { ...labels, "gen_ai.token.type": "input" });
      meters.tokens.record(usage.output_tokens, { ...labels, "gen_ai.token.type": "output" });
    }
  }

  return {
    traceId: server?.traceId ?? "",
    spanId: server?.spanId ?? "",
    call<T>(body: JsonObject, run: () => Promise<T>): Promise<T> {
      calledAt = options.now();
      const parent = context.active();
      model = tracer.startSpan(`${operationOf(exchange)} ${exchange.model}`, { kind: SpanKind.CLIENT }, parent);
      if (model.isRecording()) {
        model.setAttributes(attrs({
          "gen_ai.operation.name": operationOf(exchange),
          "gen_ai.request.model": exchange.model ?? "",
          ...requestAttributes(body),
          ...options.captureContent && exchange.protocol !== "mcp" ? inputContent(exchange.protocol, body) : {},
        }));
      }
      // The attempts name this context as their parent themselves, so the call need not run inside it.
      modelContext = trace.setSpan(parent, model);
      return run();
    },
    attempt<T>(config: UpstreamConfig, passthrough: boolean, run: () => Promise<T>): Promise<T> {
      if (!model || !modelContext) return run();
      // The upstream of the last attempt is the model span's; it is set there once, at the end.
      upstream = options.upstreamOf(config, passthrough);
      current = tracer.startSpan(`attempt ${config.name}`, { kind: SpanKind.INTERNAL }, modelContext);
      if (current.isRecording()) {
        current.setAttributes(attrs({ ...upstream, "modelgate.attempt": int(exchange.attempts.length + 1) }));
      }
      return context.with(trace.setSpan(modelContext, current), run);
    },
    attempted(attempt: Attempt): void {
      const span = current;
      current = undefined;
      if (!span) return;
      if (!span.isRecording()) return void (attempt.outcome === "ok" ? served = span : span.end());
      const values: TraceAttributes = { "modelgate.attempt.outcome": attempt.outcome };
      if (attempt.status !== undefined) values["http.response.status_code"] = int(attempt.status);
      if (attempt.request_id) values["modelgate.upstream.request_id"] = attempt.request_id;
      span.setAttributes(attrs(values));
      // The attempt that answered lives on with its stream; the exchange's end closes it.
      if (attempt.outcome === "ok") return void (served = span);
      fail(span, attempt.outcome);
      span.end();
    },
    answered(body: JsonObject): void {
      if (options.captureContent && model?.isRecording()) model.setAttributes(outputContent(body));
    },
    waiting(ms: number): void {
      model?.addEvent("modelgate.retry_after.wait", attrs({ "modelgate.wait_ms": int(ms) }));
    },
    mcp: (call, run) => mcpSpan({ ...options, duration: meters.mcpDuration }, context.active(), call, run),
    end,
  };
}

/** Marks a span as failed with the gateway's error kind, the conventions' `error.type`. */
function fail(span: Span, kind: string): void {
  span.setAttribute("error.type", kind);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

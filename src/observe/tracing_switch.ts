/**
 * @module Whether the runtime exports telemetry, and the tracing observer made only then: a gateway without
 * `OTEL_DENO` never loads the OpenTelemetry API or the tracing code, so it does not hold them in memory.
 */
import type { Observer } from "../core/exchange.ts";

type Env = (name: string) => string | undefined;

/** True when the runtime exports telemetry: decided once at start, so with it off no request does span work. */
export function tracingEnabled(env: Env): boolean {
  // The runtime's own test: "true" in any case, nothing else.
  return env("OTEL_DENO")?.toLowerCase() === "true";
}

/** The tracing observer when the runtime exports telemetry (loading its code then), else undefined. */
export async function loadTracing(env: Env, currency: string): Promise<Observer | undefined> {
  if (!tracingEnabled(env)) return undefined;
  // Deno wires the API to its exporter when OTEL_DENO is on.
  const [{ metrics, trace }, { tracingObserver }] = await Promise.all([
    import("@opentelemetry/api"),
    import("./tracing.ts"),
  ]);
  return tracingObserver({
    tracer: trace.getTracer("modelgate"),
    meter: metrics.getMeter("modelgate"),
    currency,
    captureContent: env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")?.toLowerCase() === "true",
    now: Date.now,
  });
}

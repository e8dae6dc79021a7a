/**
 * @module An OTLP/HTTP receiver on 127.0.0.1 port 0 for tests: it takes what a process started with `OTEL_DENO=true`
 * and `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` exports (traces, metrics, logs), decodes it, and resolves waits as soon
 * as what they wait for has arrived; and reading the gateway's span tree of one request from it.
 */
import { within } from "./_reads.ts";

/** An OTLP attribute value as the JSON encoding writes it: the key names the type (`intValue` is a string). */
export type OtlpValue =
  | { stringValue: string }
  | { intValue: string }
  | { doubleValue: number }
  | { boolValue: boolean }
  | { arrayValue: { values?: OtlpValue[] } };

/** One exported span. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, OtlpValue>;
  events: { name: string; attributes: Record<string, OtlpValue> }[];
  status: { code?: number };
}

/** One exported metric data point, with its metric's name. */
export interface OtlpPoint {
  metric: string;
  attributes: Record<string, OtlpValue>;
  /** Histograms: how many values were recorded, and their sum. */
  count?: string;
  sum?: number;
}

/** A running receiver. */
export interface OtlpReceiver extends AsyncDisposable {
  /** The base for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  spans: OtlpSpan[];
  points: OtlpPoint[];
  /** The body of every log record, as text (what the process printed, for console output). */
  logs: string[];
  /** Every request body as it arrived, to search for what must never be exported. */
  raw: string[];
  /** Resolves with the first value `find` gives, checked at once and after each export arrives; fails after `ms`. */
  waitFor<T>(what: string, find: () => T | undefined, ms?: number): Promise<T>;
}

/**
 * The environment that makes a Deno process export to `receiver` quickly, as JSON. The runtime's default is
 * protobuf; JSON is asked for explicitly so this receiver reads exports with `JSON.parse` and no protobuf decoder,
 * as the local receiver in docs/operating.md does.
 */
export function otlpEnv(receiver: Pick<OtlpReceiver, "url">): Record<string, string> {
  return {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "modelgate-test",
    OTEL_BSP_SCHEDULE_DELAY: "50",
    OTEL_BLRP_SCHEDULE_DELAY: "50",
    OTEL_METRIC_EXPORT_INTERVAL: "200",
  };
}

type Json = Record<string, unknown>;

function list(value: unknown): Json[] {
  return Array.isArray(value) ? value as Json[] : [];
}

function attributes(value: unknown): Record<string, OtlpValue> {
  const out: Record<string, OtlpValue> = {};
  for (const entry of list(value)) out[String(entry.key)] = entry.value as OtlpValue;
  return out;
}

function decodeSpans(body: Json): OtlpSpan[] {
  return list(body.resourceSpans).flatMap((resource) =>
    list(resource.scopeSpans).flatMap((scope) =>
      list(scope.spans).map((span) => ({
        traceId: String(span.traceId),
        spanId: String(span.spanId),
        parentSpanId: String(span.parentSpanId ?? ""),
        name: String(span.name),
        kind: Number(span.kind),
        attributes: attributes(span.attributes),
        events: list(span.events).map((event) => ({
          name: String(event.name),
          attributes: attributes(event.attributes),
        })),
        status: (span.status ?? {}) as { code?: number },
      }))
    )
  );
}

function decodePoints(body: Json): OtlpPoint[] {
  return list(body.resourceMetrics).flatMap((resource) =>
    list(resource.scopeMetrics).flatMap((scope) =>
      list(scope.metrics).flatMap((metric) => {
        const data = (metric.histogram ?? metric.sum ?? metric.gauge ?? {}) as Json;
        return list(data.dataPoints).map((point) => ({
          metric: String(metric.name),
          attributes: attributes(point.attributes),
          count: point.count === undefined ? undefined : String(point.count),
          sum: typeof point.sum === "number" ? point.sum : undefined,
        }));
      })
    )
  );
}

function decodeLogs(body: Json): string[] {
  return list(body.resourceLogs).flatMap((resource) =>
    list(resource.scopeLogs).flatMap((scope) =>
      list(scope.logRecords).map((record) => {
        const body = record.body as { stringValue?: string } | undefined;
        return body?.stringValue ?? JSON.stringify(body);
      })
    )
  );
}

/** Starts a receiver. */
export function otlpReceiver(): OtlpReceiver {
  const spans: OtlpSpan[] = [];
  const points: OtlpPoint[] = [];
  const logs: string[] = [];
  const raw: string[] = [];
  const waiters = new Set<() => void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const text = await req.text();
    raw.push(text);
    const body = JSON.parse(text) as Json;
    const path = new URL(req.url).pathname;
    if (path === "/v1/traces") spans.push(...decodeSpans(body));
    else if (path === "/v1/metrics") points.push(...decodePoints(body));
    else if (path === "/v1/logs") logs.push(...decodeLogs(body));
    for (const wake of [...waiters]) wake();
    return Response.json({});
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    spans,
    points,
    logs,
    raw,
    waitFor<T>(what: string, find: () => T | undefined, ms = 15_000): Promise<T> {
      const found = Promise.withResolvers<T>();
      const check = () => {
        const value = find();
        if (value === undefined) return;
        waiters.delete(check);
        found.resolve(value);
      };
      waiters.add(check);
      check();
      return within(found.promise, ms, what).finally(() => waiters.delete(check));
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** A span attribute's value, with its OTLP type, for `assert.deepEqual`. */
export function attr(span: Attributed, key: string): OtlpValue | undefined {
  return span.attributes[key];
}

/** Something with attributes: a span or a metric point. */
type Attributed = { attributes: Record<string, OtlpValue> };

/** A string attribute's value. */
export const text = (item: Attributed, key: string) =>
  (attr(item, key) as { stringValue?: string } | undefined)?.stringValue;
/** An integer attribute's value. */
const count = (span: OtlpSpan, key: string) => Number((attr(span, key) as { intValue?: string } | undefined)?.intValue);

/** The request's spans once its model span has arrived: the model span, its attempts in order, the server span. */
export async function treeOf(receiver: OtlpReceiver, requestId: string) {
  const model = await receiver.waitFor(
    `the model span of ${requestId}`,
    () => receiver.spans.find((span) => text(span, "modelgate.request_id") === requestId),
  );
  const attempts = await receiver.waitFor(`the attempt spans of ${requestId}`, () => {
    const found = receiver.spans.filter((span) => span.parentSpanId === model.spanId);
    return found.length === count(model, "modelgate.attempts") ? found : undefined;
  });
  attempts.sort((a, b) => count(a, "modelgate.attempt") - count(b, "modelgate.attempt"));
  const server = await receiver.waitFor(
    `the server span of ${requestId}`,
    () => receiver.spans.find((span) => span.spanId === model.parentSpanId),
  );
  return { model, attempts, server };
}

/** The runtime's fetch span under an attempt span. */
export function fetchUnder(receiver: OtlpReceiver, attempt: OtlpSpan): Promise<OtlpSpan> {
  return receiver.waitFor(
    `the fetch span under ${attempt.name}`,
    () => receiver.spans.find((span) => span.parentSpanId === attempt.spanId && span.kind === 3),
  );
}

/** @module Gateway metrics from exchanges: counts, failovers, tokens, live gauges, and labels from bounded sets. */
import assert from "node:assert/strict";
import type { Exchange } from "../../src/core/exchange.ts";
import { createMetrics } from "../../src/observe/metrics.ts";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";

function exchange(extra: Partial<Exchange> = {}): Exchange {
  return {
    request_id: "req_1",
    started_at: 0,
    method: "POST",
    route: "/v1/messages",
    protocol: "anthropic",
    model: "m1",
    stream: false,
    attempts: [],
    status: 0,
    ...extra,
  };
}

Deno.test("createMetrics() counts failovers (not retries on one deployment), failures by kind and tokens by model", () => {
  const metrics = createMetrics({ models: ["m1"], upstreams: ["a", "b"] });
  const ex = exchange();
  metrics.observer.start?.(ex);
  Object.assign(ex, {
    status: 200,
    upstream: "b",
    duration_ms: 1500,
    ttfb_ms: 200,
    attempts: [
      { upstream: "a", outcome: "upstream", status: 500 },
      { upstream: "a", outcome: "overloaded", status: 529 },
      { upstream: "b", outcome: "ok", status: 200 },
    ],
    usage: { input_tokens: 10, output_tokens: 4, cache_read_input_tokens: 2, cache_creation_input_tokens: 0 },
  });
  metrics.observer.finish?.(ex);
  const page = parsePrometheusText(metrics.render());
  const labels = { route: "/v1/messages", status: "200", model: "m1", upstream: "b" };
  assert.equal(sampleValue(page, "modelgate_requests_total", labels), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_attempts_total", { upstream: "a", outcome: "overloaded" }), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_attempts_total", { upstream: "b", outcome: "ok" }), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_failures_total", { upstream: "a", kind: "overloaded" }), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_failures_total", { upstream: "b" }), undefined);
  // Two attempts on "a", one move away from it: the retry on the same deployment is no failover.
  assert.equal(sampleValue(page, "modelgate_upstream_failovers_total", { upstream: "a" }), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_failovers_total", { upstream: "b" }), undefined);
  assert.equal(sampleValue(page, "modelgate_tokens_total", { model: "m1", type: "input" }), 10);
  assert.equal(sampleValue(page, "modelgate_tokens_total", { model: "m1", type: "output" }), 4);
  assert.equal(sampleValue(page, "modelgate_tokens_total", { model: "m1", type: "cache_read" }), 2);
  const bucket = { route: "/v1/messages", model: "m1" };
  assert.equal(sampleValue(page, "modelgate_request_duration_seconds_bucket", { ...bucket, le: "1" }), 0);
  assert.equal(sampleValue(page, "modelgate_request_duration_seconds_bucket", { ...bucket, le: "2.5" }), 1);
  assert.equal(sampleValue(page, "modelgate_time_to_first_byte_seconds_bucket", { ...bucket, le: "0.25" }), 1);
  assert.equal(sampleValue(page, "modelgate_requests_in_flight", {}), 0);
});

Deno.test("createMetrics() maps an unknown model, upstream or kind to a fixed label", () => {
  const metrics = createMetrics({ models: ["m1"], upstreams: ["a"] });
  const ex = exchange({
    model: 'evil\n"model"{x}',
    status: 404,
    error: "made_up_kind",
    attempts: [{ upstream: "zzz", outcome: "weird" }],
  });
  metrics.observer.start?.(ex);
  metrics.observer.finish?.(ex);
  const text = metrics.render();
  assert.ok(!text.includes("evil") && !text.includes("zzz") && !text.includes("weird") && !text.includes("made_up"));
  const page = parsePrometheusText(text);
  assert.equal(sampleValue(page, "modelgate_requests_total", { model: "other", status: "404", upstream: "none" }), 1);
  assert.equal(sampleValue(page, "modelgate_request_errors_total", { kind: "other" }), 1);
  assert.equal(sampleValue(page, "modelgate_upstream_attempts_total", { upstream: "other", outcome: "other" }), 1);
});

Deno.test("createMetrics() reads in-flight requests and open streams at scrape time", () => {
  const metrics = createMetrics({ models: ["m1"], upstreams: ["a"] });
  const plain = exchange();
  const stream = exchange({ stream: true });
  metrics.observer.start?.(plain);
  metrics.observer.start?.(stream);
  let page = parsePrometheusText(metrics.render());
  assert.equal(sampleValue(page, "modelgate_requests_in_flight", {}), 2);
  assert.equal(sampleValue(page, "modelgate_streams_open", {}), 0, "a stream opens when its response starts");
  stream.status = 200;
  page = parsePrometheusText(metrics.render());
  assert.equal(sampleValue(page, "modelgate_streams_open", {}), 1);
  metrics.observer.finish?.(stream);
  metrics.observer.finish?.(plain);
  page = parsePrometheusText(metrics.render());
  assert.equal(sampleValue(page, "modelgate_requests_in_flight", {}), 0);
  assert.equal(sampleValue(page, "modelgate_streams_open", {}), 0);
});

Deno.test("createMetrics() keeps separate counts per instance", () => {
  const one = createMetrics({ models: ["m1"], upstreams: ["a"] });
  const two = createMetrics({ models: ["m1"], upstreams: ["a"] });
  const ex = exchange({ status: 200 });
  one.observer.start?.(ex);
  one.observer.finish?.(ex);
  assert.equal(sampleValue(parsePrometheusText(one.render()), "modelgate_requests_total", {}), 1);
  assert.equal(sampleValue(parsePrometheusText(two.render()), "modelgate_requests_total", {}), undefined);
});

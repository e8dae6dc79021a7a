/** @module The metrics registry renders valid exposition text, and the test reader rejects invalid text. */
import assert from "node:assert/strict";
import { createRegistry, escapeLabelValue } from "../../src/observe/prometheus.ts";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";

Deno.test("createRegistry() renders counters, histograms and gauges as valid exposition text", () => {
  const registry = createRegistry();
  const counter = registry.counter("x_total", "Things");
  counter.inc({ route: "/v1/messages", status: "200" });
  counter.inc({ route: "/v1/messages", status: "200" }, 2);
  counter.inc({ route: 'a"b\\c\nd', status: "500" });
  const histogram = registry.histogram("x_seconds", "Durations", [0.1, 1]);
  histogram.observe({ route: "r" }, 0.05);
  histogram.observe({ route: "r" }, 0.5);
  histogram.observe({ route: "r" }, 5);
  registry.gauge("x_open", "Open things", () => [[{}, 4]]);
  const families = parsePrometheusText(registry.render());
  assert.equal(families.get("x_total")?.type, "counter");
  assert.equal(sampleValue(families, "x_total", { route: "/v1/messages", status: "200" }), 3);
  assert.equal(sampleValue(families, "x_total", { route: 'a"b\\c\nd' }), 1);
  assert.equal(sampleValue(families, "x_seconds_bucket", { route: "r", le: "0.1" }), 1);
  assert.equal(sampleValue(families, "x_seconds_bucket", { route: "r", le: "1" }), 2);
  assert.equal(sampleValue(families, "x_seconds_bucket", { route: "r", le: "+Inf" }), 3);
  assert.equal(sampleValue(families, "x_seconds_sum", { route: "r" }), 5.55);
  assert.equal(sampleValue(families, "x_open", {}), 4);
});

const ESCAPES = [
  { input: "plain", want: "plain" },
  { input: 'quote"', want: 'quote\\"' },
  { input: "back\\slash", want: "back\\\\slash" },
  { input: "new\nline", want: "new\\nline" },
];
for (const c of ESCAPES) {
  Deno.test(`escapeLabelValue() escapes ${JSON.stringify(c.input)}`, () => {
    assert.equal(escapeLabelValue(c.input), c.want);
  });
}

const INVALID = [
  { name: "no final newline", page: "# TYPE a counter\na 1" },
  { name: "a bad metric name", page: "1a 1\n" },
  { name: "an unquoted label value", page: "a{b=c} 1\n" },
  { name: "a bad value", page: "a 1x\n" },
  { name: "a duplicate series", page: 'a{b="c"} 1\na{b="c"} 2\n' },
  { name: "a TYPE after samples", page: "a 1\n# TYPE a counter\n" },
  { name: "interleaved families", page: 'a 1\nb 1\na{x="y"} 1\n' },
  { name: "a bad escape", page: 'a{b="\\x"} 1\n' },
  {
    name: "a histogram whose +Inf bucket differs from its count",
    page: '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 3\nh_count 3\n',
  },
  {
    name: "a histogram with falling buckets",
    page: '# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="2"} 2\nh_bucket{le="+Inf"} 3\nh_sum 3\nh_count 3\n',
  },
];
for (const c of INVALID) {
  Deno.test(`parsePrometheusText() rejects ${c.name}`, () => {
    assert.throws(() => parsePrometheusText(c.page), SyntaxError);
  });
}

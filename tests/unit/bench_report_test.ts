/** @module The benchmark's report: statistics, the comparison with the floor, the targets and the table. */
import assert from "node:assert/strict";
import {
  compare,
  type Comparison,
  formatColumns,
  median,
  type Memory,
  percentile,
  renderReport,
  side,
  stat,
  type Ttfb,
} from "../../bench/report.ts";
import { evaluateTargets } from "../../bench/targets.ts";
import type { WrkResult } from "../../bench/wrk.ts";

function run(rps: number, p50Us: number, p99Us: number, status = 0): WrkResult {
  return {
    requests: rps,
    durationUs: 1e6,
    rps,
    errors: { connect: 0, read: 0, write: 0, status, timeout: 0 },
    latencyUs: { p50: p50Us, p90: p99Us, p99: p99Us, max: p99Us, mean: p50Us },
  };
}

const STAT_CASES = [
  { name: "of one value has no spread", input: [5], want: { mean: 5, min: 5, max: 5, spreadPct: 0 } },
  {
    name: "of two values spreads (max - min) / mean",
    input: [90, 110],
    want: { mean: 100, min: 90, max: 110, spreadPct: 20 },
  },
  { name: "of all zeros has no spread", input: [0, 0], want: { mean: 0, min: 0, max: 0, spreadPct: 0 } },
];
for (const c of STAT_CASES) {
  Deno.test(`stat() ${c.name}`, () => assert.deepEqual(stat(c.input), c.want));
}

Deno.test("stat() of nothing is NaN, not zero", () => assert.ok(Number.isNaN(stat([]).mean)));

const PERCENTILE_CASES = [
  { name: "p50 of 1..10 by nearest rank", values: [10, 1, 9, 2, 8, 3, 7, 4, 6, 5], p: 50, want: 5 },
  { name: "p99 of 1..10 is the largest", values: [10, 1, 9, 2, 8, 3, 7, 4, 6, 5], p: 99, want: 10 },
  { name: "p0 is the smallest", values: [3, 1, 2], p: 0, want: 1 },
  { name: "of one value is that value", values: [4.2], p: 99, want: 4.2 },
];
for (const c of PERCENTILE_CASES) {
  Deno.test(`percentile() ${c.name}`, () => assert.equal(percentile(c.values, c.p), c.want));
}

Deno.test("median() takes the upper middle of an even count (not percentile 50's lower), and NaN of nothing", () => {
  assert.equal(median([10, 1, 9, 2, 8, 3, 7, 4, 6, 5]), 6);
  assert.equal(median([3, 1, 2]), 2);
  assert.ok(Number.isNaN(median([])));
});

Deno.test("side() converts microseconds to ms and counts every kind of error over the repeats", () => {
  const s = side([run(1000, 500, 2000, 2), run(3000, 700, 4000, 1)]);
  assert.equal(s.rps.mean, 2000);
  assert.equal(s.p50Ms.mean, 0.6);
  assert.equal(s.p99Ms.mean, 3);
  assert.equal(s.errors, 3);
});

Deno.test("compare() gives the throughput ratio and the added latencies", () => {
  const c = compare("messages", 64, side([run(10_000, 1000, 3000)]), side([run(4000, 1150, 3500)]));
  assert.equal(c.throughputRatio, 0.4);
  assert.ok(Math.abs(c.addedP50Ms - 0.15) < 1e-9);
  assert.ok(Math.abs(c.addedP99Ms - 0.5) < 1e-9);
});

Deno.test("compare() keeps the reason and no numbers for an unavailable gateway side", () => {
  const c = compare("translated", 1, side([run(10_000, 100, 300)]), { unavailable: "HTTP 503" });
  assert.equal(c.gateway, undefined);
  assert.equal(c.unavailable, "HTTP 503");
  assert.ok(Number.isNaN(c.throughputRatio));
});

const MB = 1024 * 1024;

function fixture(options: { ratio64: number; added1Us: number; translatedRps?: number; ttfbAdded: number }) {
  const comparisons: Comparison[] = [];
  for (const name of ["messages", "messages_stream", "translated", "translated_stream"]) {
    for (const c of [1, 64]) {
      const direct = side([run(10_000, 100, 300)]);
      const passthrough = name.startsWith("messages");
      const rps = passthrough ? 10_000 * options.ratio64 : options.translatedRps;
      comparisons.push(
        compare(
          name,
          c,
          direct,
          rps === undefined ? { unavailable: "HTTP 503" } : side([run(rps, 100 + options.added1Us, 400)]),
        ),
      );
    }
  }
  const ttfb: Ttfb[] = [{
    case: "messages_stream",
    directP50Ms: 0.3,
    directP99Ms: 1,
    gatewayP50Ms: 0.3 + options.ttfbAdded,
    gatewayP99Ms: 2,
  }];
  return { comparisons, ttfb };
}

const MEMORY_OK: Memory = {
  peakRssBytes: 80 * MB,
  rssAfter: [{ requests: 10_000, rssBytes: 60 * MB }, { requests: 100_000, rssBytes: 62 * MB }],
};

Deno.test("formatColumns() left-aligns the first column and right-aligns the others", () => {
  assert.equal(formatColumns([["case", "rps"], ["messages", "9"]]), "case      rps\nmessages    9");
});

Deno.test("renderReport() shows ratios, spread, unavailable cases and verdicts", () => {
  const { comparisons, ttfb } = fixture({ ratio64: 0.5, added1Us: 150, ttfbAdded: 0.4 });
  comparisons[0] = compare(
    "messages",
    1,
    side([run(9000, 100, 300), run(11_000, 100, 300)]),
    side([run(5000, 250, 700)]),
  );
  const text = renderReport({
    comparisons,
    ttfb,
    memory: MEMORY_OK,
    targets: evaluateTargets({ comparisons, ttfb, memory: MEMORY_OK }),
  });
  // Columns: direct, floor and gateway rps; floor/direct and gw/direct; direct p50; floor, gw +p50; floor, gw +p99.
  assert.match(
    text,
    /messages\s+1\s+10000 ±10%\s+n\/a\s+5000\s+n\/a\s+50%\s+0\.100\s+n\/a\s+\+0\.150\s+n\/a\s+\+0\.400/,
  );
  assert.match(text, /translated\s+64\s+10000\s+n\/a\s+unavailable\s+n\/a/);
  assert.match(text, /messages_stream\s+0\.300\s+n\/a\s+0\.700\s+\+0\.400/);
  assert.match(text, /RSS after 100000 requests: 62\.0 MB/);
  assert.match(text, /gateway peak RSS\s+80\.0 MB \(floor \+ n\/a\)\s+<= floor \+ 60 MB\s+UNAVAILABLE\s+n\/a/);
});

Deno.test("side() averages the server CPU per request over the repeats that measured it", () => {
  const s = side([{ ...run(1000, 100, 300), serverCpuUsPerRequest: 200 }, run(1000, 100, 300), {
    ...run(1000, 100, 300),
    serverCpuUsPerRequest: 300,
  }]);
  assert.equal(s.cpuUsPerRequest.mean, 250);
});

Deno.test("compare() gives the floor proxy's ratio and added p50 beside the gateway's, NaN without it", () => {
  const direct = side([run(10_000, 1000, 3000)]);
  const c = compare("messages", 64, direct, side([run(2000, 1500, 3500)]), side([run(4000, 1300, 3200)]));
  assert.equal(c.floorRatio, 0.4);
  assert.ok(Math.abs(c.floorAddedP50Ms - 0.3) < 1e-9);
  assert.equal(c.throughputRatio, 0.2);
  const without = compare("messages", 64, direct, side([run(2000, 1500, 3500)]));
  assert.ok(Number.isNaN(without.floorRatio) && Number.isNaN(without.floorAddedP50Ms));
});

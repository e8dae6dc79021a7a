import assert from "node:assert/strict";
import type { OpenStreamsSide } from "../../bench/open_streams.ts";
import { compare, type Comparison, type Memory, renderReport, side, type Ttfb } from "../../bench/report.ts";
import { LONG_EVENTS } from "../../bench/fake_upstream.ts";
import { evaluateTargets } from "../../bench/targets.ts";
import type { WrkResult } from "../../bench/wrk.ts";

const MB = 1024 * 1024;

/** One measured run at `rps` whose serving process used `cpu` us per request. */
function measured(cpu: number, rps = 1000): ReturnType<typeof side> {
  const run: WrkResult = {
    requests: rps,
    durationUs: 1e6,
    rps,
    errors: { connect: 0, read: 0, write: 0, status: 0, timeout: 0 },
    latencyUs: { p50: 100, p90: 300, p99: 300, max: 300, mean: 100 },
    serverCpuUsPerRequest: cpu,
  };
  return side([run]);
}

/** Gateway and floor CPU per request (per stream for the long case); undefined gateway means unavailable. */
interface Figures {
  messages: [gateway: number, floor: number];
  stream: [gateway: number, floor: number];
  translated?: number;
  translatedStream?: number;
  long: [gateway: number, floor: number];
  open?: { gateway: [kib: number, us: number]; floor: [kib: number, us: number] };
  ttfb: { gateway: number; floor: number };
  peakMb: [gateway: number, floor: number];
  rssMb: [first: number, last: number];
}

function openSide(name: "floor" | "gateway", [kib, us]: [number, number]): OpenStreamsSide {
  return {
    side: name,
    streams: 1000,
    completed: 1000,
    events: 60_000,
    rssBeforeBytes: 100 * MB,
    rssPeakBytes: 100 * MB + kib * 1024 * 1000,
    rssPerStreamBytes: kib * 1024,
    cpuUsPerEvent: us,
    seconds: 6,
  };
}

function run(f: Figures) {
  const direct = measured(20, 20_000);
  const comparisons: Comparison[] = [
    compare("messages", 64, direct, measured(f.messages[0]), measured(f.messages[1])),
    compare("messages_stream", 64, direct, measured(f.stream[0]), measured(f.stream[1])),
    compare(
      "translated",
      64,
      direct,
      f.translated === undefined ? { unavailable: "HTTP 503" } : measured(f.translated),
    ),
    compare(
      "translated_stream",
      64,
      direct,
      f.translatedStream === undefined ? { unavailable: "HTTP 503" } : measured(f.translatedStream),
    ),
    compare("long_stream", 4, direct, measured(f.long[0]), measured(f.long[1])),
  ];
  const ttfb: Ttfb[] = [{
    case: "messages_stream",
    directP50Ms: 0.3,
    directP99Ms: 1,
    gatewayP50Ms: 0.3 + f.ttfb.gateway,
    gatewayP99Ms: 2,
    floorP50Ms: 0.3 + f.ttfb.floor,
  }];
  const memory: Memory = {
    peakRssBytes: f.peakMb[0] * MB,
    floorPeakRssBytes: f.peakMb[1] * MB,
    rssAfter: [{ requests: 10_000, rssBytes: f.rssMb[0] * MB }, { requests: 100_000, rssBytes: f.rssMb[1] * MB }],
  };
  const openStreams = f.open ? [openSide("floor", f.open.floor), openSide("gateway", f.open.gateway)] : undefined;
  return { comparisons, ttfb, memory, openStreams };
}

const GOOD: Figures = {
  messages: [140, 100],
  stream: [290, 200],
  translated: 200,
  translatedStream: 400,
  long: [2.5 * LONG_EVENTS, 2 * LONG_EVENTS],
  open: { gateway: [28, 14], floor: [20, 10] },
  ttfb: { gateway: 0.25, floor: 0.2 },
  peakMb: [160, 130],
  rssMb: [60, 62],
};

const NAMES = [
  "messages: CPU per request at c=64",
  "messages_stream: CPU per request at c=64",
  "translated: CPU per request vs messages at c=64",
  "translated_stream: CPU per request vs messages_stream at c=64",
  "long_stream: CPU per event at c=4",
  "open streams: RSS per open stream",
  "open streams: CPU per event",
  "messages_stream: added TTFB p50",
  "gateway peak RSS",
  "RSS growth 10000 -> 100000 requests",
];

Deno.test("evaluateTargets() passes every target a good run meets, each named with its floor figure", () => {
  const targets = evaluateTargets(run(GOOD));
  assert.deepEqual(targets.map((t) => [t.name, t.status]), NAMES.map((n) => [n, "pass"]));
  assert.deepEqual(targets.map((t) => t.floor), [
    "100 us",
    "200 us",
    "n/a",
    "n/a",
    "2.00 us",
    "20.0 KiB",
    "10.0 us",
    "0.200 ms",
    "130.0 MB",
    "n/a",
  ]);
  assert.equal(targets[4].value, "2.50 us (1.25x)");
  assert.equal(targets[0].limit, "<= 1.5x floor");
});

Deno.test("evaluateTargets() fails each target just past its limit", () => {
  const targets = evaluateTargets(run({
    messages: [151, 100],
    stream: [301, 200],
    translated: 303,
    translatedStream: 603,
    long: [3.02 * LONG_EVENTS, 2 * LONG_EVENTS],
    open: { gateway: [30.2, 15.1], floor: [20, 10] },
    ttfb: { gateway: 0.31, floor: 0.2 },
    peakMb: [171, 130],
    rssMb: [60, 67],
  }));
  assert.deepEqual(targets.map((t) => [t.name, t.status]), NAMES.map((n) => [n, "fail"]));
});

Deno.test("evaluateTargets() reports a target unavailable, not failed, when a figure is missing", () => {
  const targets = evaluateTargets(
    run({ ...GOOD, translated: undefined, translatedStream: undefined, open: undefined }),
  );
  const status = Object.fromEntries(targets.map((t) => [t.name, t.status]));
  assert.equal(status[NAMES[2]], "unavailable");
  assert.equal(status[NAMES[3]], "unavailable");
  assert.equal(status[NAMES[5]], "unavailable");
  assert.equal(status[NAMES[6]], "unavailable");
  assert.equal(status[NAMES[0]], "pass");
});

Deno.test("evaluateTargets() cannot judge a per-unit target without the floor beside it", () => {
  const input = run(GOOD);
  input.comparisons[0] = compare("messages", 64, measured(20), measured(140));
  assert.equal(evaluateTargets(input)[0].status, "unavailable");
});

Deno.test("evaluateTargets() does not judge RSS growth from a first checkpoint before 10,000 requests", () => {
  const input = run(GOOD);
  input.memory.rssAfter = [{ requests: 2_000, rssBytes: 40 * MB }, { requests: 20_000, rssBytes: 52 * MB }];
  const growth = evaluateTargets(input)[9];
  assert.equal(growth.value, "30.0%");
  assert.equal(growth.status, "unavailable");
});

Deno.test("evaluateTargets() cannot judge RSS growth from a single checkpoint", () => {
  const input = run(GOOD);
  input.memory.rssAfter = [{ requests: 10_000, rssBytes: 40 * MB }];
  assert.equal(evaluateTargets(input)[9].status, "unavailable");
});

Deno.test("renderReport() prints CPU per event of the long stream, the open-streams table and the targets", () => {
  const input = run(GOOD);
  const text = renderReport({ ...input, targets: evaluateTargets(input) });
  assert.match(
    text,
    /long_stream \(2000 events\) at c=4, CPU per event: upstream 0\.01 us, floor 2\.00 us, gateway 2\.50 us/,
  );
  assert.match(text, /Open streams: 1000 paced streams at once/);
  assert.match(text, /gateway\s+1000\/1000\s+60000\s+100\.0 MB\s+127\.3 MB\s+28\.0\s+14\.0\s+6\.0/);
  assert.match(text, /open streams: RSS per open stream\s+28\.0 KiB \(1\.40x\)\s+<= 1\.5x floor\s+PASS\s+20\.0 KiB/);
  assert.match(text, /gateway peak RSS\s+160\.0 MB\s+<= floor \+ 40 MB\s+PASS\s+130\.0 MB/);
});

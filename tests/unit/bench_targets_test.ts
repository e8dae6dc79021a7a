import assert from "node:assert/strict";
import type { OpenStreamsSide } from "../../bench/open_streams.ts";
import { compare, type Comparison, type Memory, renderReport, side, type Ttfb } from "../../bench/report.ts";
import { LONG_EVENTS } from "../../bench/fake_upstream.ts";
import { type BodiesResult, evaluateTargets } from "../../bench/targets.ts";
import type { WrkResult } from "../../bench/wrk.ts";

const MB = 1024 * 1024;

/** One measured run at `rps` whose serving process used `cpu` us per request, `p99` ms at the 99th percentile. */
function measured(cpu: number, rps = 1000, p99 = 0.3): ReturnType<typeof side> {
  const run: WrkResult = {
    requests: rps,
    durationUs: 1e6,
    rps,
    errors: { connect: 0, read: 0, write: 0, status: 0, timeout: 0 },
    latencyUs: { p50: 100, p90: 300, p99: p99 * 1000, max: p99 * 1000, mean: 100 },
    serverCpuUsPerRequest: cpu,
  };
  return side([run]);
}

/** Gateway and floor figures (CPU per request, per stream for the long case); undefined gateway means unavailable. */
interface Figures {
  messages: [gateway: number, floor: number];
  stream: [gateway: number, floor: number];
  translated?: number;
  translatedStream?: number;
  /** The Responses passthrough and the Messages client translated onto it, non-streamed and streamed. */
  responses?: [passthrough: number, stream: number, translated: number, translatedStream: number];
  /** The embeddings case (16 inputs) through the gateway. */
  embeddings?: number;
  /** Gateway, native floor and bare JS relay CPU per long stream. */
  long: [gateway: number, floor: number, jsRelay: number];
  /** Added p99 at c=16 in ms (direct p99 is 1 ms), gateway and floor, non-streamed and streamed. */
  p99: { messages: [number, number]; stream: [number, number] };
  /** RSS peaks with the open streams, in MB. */
  open?: { gateway: number; floor: number };
  peakMb: [gateway: number, floor: number];
  idleMb: number;
  bodies?: [passthrough: number, translated: number];
  rssMb: [first: number, last: number];
}

function openSide(name: "floor" | "gateway", peakMb: number): OpenStreamsSide {
  return {
    side: name,
    streams: 512,
    completed: 512,
    events: 30_720,
    rssBeforeBytes: 50 * MB,
    rssPeakBytes: peakMb * MB,
    rssPerStreamBytes: ((peakMb - 50) * MB) / 512,
    cpuUsPerEvent: 20,
    seconds: 6,
  };
}

function run(f: Figures) {
  const direct = measured(20, 20_000);
  const atC16 = (name: string, [gateway, floor]: [number, number]) =>
    compare(name, 16, measured(20, 20_000, 1), measured(100, 1000, 1 + gateway), measured(50, 1000, 1 + floor));
  const comparisons: Comparison[] = [
    atC16("messages", f.p99.messages),
    compare("messages", 64, direct, measured(f.messages[0]), measured(f.messages[1])),
    atC16("messages_stream", f.p99.stream),
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
    ...["responses", "responses_stream", "translated_responses", "translated_responses_stream"].map((name, i) =>
      compare(name, 64, direct, f.responses ? measured(f.responses[i]) : { unavailable: "HTTP 503" })
    ),
    compare("embeddings", 64, direct, f.embeddings ? measured(f.embeddings) : { unavailable: "HTTP 503" }),
    compare("long_stream", 4, direct, measured(f.long[0]), measured(f.long[1]), measured(f.long[2])),
  ];
  const ttfb: Ttfb[] = [{
    case: "messages_stream",
    directP50Ms: 0.3,
    directP99Ms: 1,
    gatewayP50Ms: 0.5,
    gatewayP99Ms: 2,
    floorP50Ms: 0.4,
  }];
  const memory: Memory = {
    peakRssBytes: f.peakMb[0] * MB,
    floorPeakRssBytes: f.peakMb[1] * MB,
    idleRssBytes: f.idleMb * MB,
    floorIdleRssBytes: 44 * MB,
    rssAfter: [{ requests: 10_000, rssBytes: f.rssMb[0] * MB }, { requests: 100_000, rssBytes: f.rssMb[1] * MB }],
  };
  const openStreams = f.open ? [openSide("floor", f.open.floor), openSide("gateway", f.open.gateway)] : undefined;
  const bodies: BodiesResult[] | undefined = f.bodies?.map((median, i) => ({
    name: i === 0 ? "passthrough" : "translated",
    count: 10,
    sizeMb: 20,
    ratios: [median],
    median,
  }));
  return { comparisons, ttfb, memory, openStreams, bodies };
}

const GOOD: Figures = {
  messages: [200, 100],
  stream: [500, 200],
  translated: 400,
  translatedStream: 1000,
  responses: [220, 550, 440, 1100],
  embeddings: 240,
  long: [2.3 * LONG_EVENTS, 0.5 * LONG_EVENTS, 2 * LONG_EVENTS],
  p99: { messages: [10, 5], stream: [12, 6] },
  open: { gateway: 180, floor: 100 },
  peakMb: [190, 130],
  idleMb: 70,
  bodies: [2.5, 2.5],
  rssMb: [60, 66],
};

const NAMES = [
  "messages: CPU per request at c=64",
  "messages_stream: CPU per request at c=64",
  "translated: CPU per request vs messages at c=64",
  "translated_stream: CPU per request vs messages_stream at c=64",
  "responses: CPU per request vs messages at c=64",
  "responses_stream: CPU per request vs messages_stream at c=64",
  "translated_responses: CPU per request vs responses at c=64",
  "translated_responses_stream: CPU per request vs responses_stream at c=64",
  "embeddings: CPU per request vs messages at c=64",
  "long_stream: CPU per event at c=4",
  "messages: added p99 at c=16",
  "messages_stream: added p99 at c=16",
  "gateway peak RSS",
  "gateway idle RSS",
  "512 open streams: peak RSS",
  "10 x 20 MB bodies, passthrough: peak RSS growth",
  "10 x 20 MB bodies, translated: peak RSS growth",
  "RSS growth 10000 -> 100000 requests",
];

Deno.test("evaluateTargets() passes every target a good run meets at its limit, each beside its reference", () => {
  const targets = evaluateTargets(run(GOOD));
  assert.deepEqual(targets.map((t) => [t.name, t.status]), NAMES.map((n) => [n, "pass"]));
  assert.deepEqual(targets.map((t) => t.floor), [
    "100 us",
    "200 us",
    "n/a",
    "n/a",
    "n/a",
    "n/a",
    "n/a",
    "n/a",
    "n/a",
    "2.00 us",
    "5.00 ms",
    "6.00 ms",
    "130.0 MB",
    "44.0 MB",
    "100.0 MB",
    "n/a",
    "n/a",
    "n/a",
  ]);
  assert.deepEqual(targets.map((t) => t.limit), [
    "<= 2x floor",
    "<= 2.5x floor",
    "<= 2x",
    "<= 2x",
    "<= 1.1x",
    "<= 1.1x",
    "<= 2x",
    "<= 2x",
    "<= 1.2x",
    "<= 1.15x JS relay",
    "<= 2x floor",
    "<= 2x floor",
    "<= floor + 60 MB",
    "<= 70 MB",
    "<= floor + 80 MB",
    "<= 2.5x",
    "<= 2.5x",
    "<= 10%",
  ]);
  assert.equal(targets[9].value, "2.30 us (1.15x)");
  assert.equal(targets[12].value, "190.0 MB (floor + 60.0)");
});

Deno.test("evaluateTargets() fails each target just past its limit", () => {
  const targets = evaluateTargets(run({
    messages: [201, 100],
    stream: [501, 200],
    translated: 403,
    translatedStream: 1003,
    responses: [222, 552, 445, 1105],
    embeddings: 242,
    long: [2.31 * LONG_EVENTS, 0.5 * LONG_EVENTS, 2 * LONG_EVENTS],
    p99: { messages: [10.1, 5], stream: [12.1, 6] },
    open: { gateway: 180.1, floor: 100 },
    peakMb: [190.1, 130],
    idleMb: 70.1,
    bodies: [2.51, 2.51],
    rssMb: [60, 66.1],
  }));
  assert.deepEqual(targets.map((t) => [t.name, t.status]), NAMES.map((n) => [n, "fail"]));
});

Deno.test("evaluateTargets() reports a target unavailable, not failed, when a figure is missing", () => {
  const targets = evaluateTargets(
    run({ ...GOOD, translated: undefined, translatedStream: undefined, open: undefined, bodies: undefined }),
  );
  const status = Object.fromEntries(targets.map((t) => [t.name, t.status]));
  assert.equal(status[NAMES[2]], "unavailable");
  assert.equal(status[NAMES[3]], "unavailable");
  assert.equal(status["? open streams: peak RSS"], "unavailable");
  assert.equal(status["large bodies, passthrough"], "unavailable");
  assert.equal(status["large bodies, translated"], "unavailable");
  assert.equal(status[NAMES[0]], "pass");
});

Deno.test("evaluateTargets() cannot judge a target without its reference beside it", () => {
  const input = run(GOOD);
  input.comparisons[1] = compare("messages", 64, measured(20), measured(140));
  input.comparisons[10] = compare("long_stream", 4, measured(20), measured(140), measured(50));
  const targets = evaluateTargets(input);
  assert.equal(targets[0].status, "unavailable");
  assert.equal(targets[8].status, "unavailable");
});

Deno.test("evaluateTargets() does not judge RSS growth from a first checkpoint before 10,000 requests", () => {
  const input = run(GOOD);
  input.memory.rssAfter = [{ requests: 2_000, rssBytes: 40 * MB }, { requests: 20_000, rssBytes: 52 * MB }];
  const growth = evaluateTargets(input).at(-1)!;
  assert.equal(growth.value, "30.0%");
  assert.equal(growth.status, "unavailable");
});

Deno.test("evaluateTargets() cannot judge RSS growth from a single checkpoint", () => {
  const input = run(GOOD);
  input.memory.rssAfter = [{ requests: 10_000, rssBytes: 40 * MB }];
  assert.equal(evaluateTargets(input).at(-1)!.status, "unavailable");
});

Deno.test("renderReport() prints per-event CPU beside the JS relay, p99 beside the floor, idle RSS and the targets", () => {
  const input = run(GOOD);
  const text = renderReport({ ...input, targets: evaluateTargets(input) });
  assert.match(
    text,
    /long_stream \(2000 events\) at c=4, CPU per event: upstream 0\.01 us, floor 0\.50 us, bare JS relay 2\.00 us, gateway 2\.30 us/,
  );
  assert.match(text, /floor \+p99\s+gw \+p99/);
  assert.match(text, /messages\s+16(\s+\S+){8}\s+\+5\.000\s+\+10\.000\s/);
  assert.match(
    text,
    /RSS idle \(fresh process, 3 s after the first request of each case\): gateway 70\.0 MB, floor proxy 44\.0 MB/,
  );
  assert.match(text, /Open streams: 512 paced streams at once/);
  assert.match(
    text,
    /512 open streams: peak RSS\s+180\.0 MB \(floor \+ 80\.0\)\s+<= floor \+ 80 MB\s+PASS\s+100\.0 MB/,
  );
  assert.match(text, /gateway peak RSS\s+190\.0 MB \(floor \+ 60\.0\)\s+<= floor \+ 60 MB\s+PASS\s+130\.0 MB/);
  assert.match(text, /10 x 20 MB bodies, translated: peak RSS growth\s+2\.50x the bodies\s+<= 2\.5x\s+PASS/);
});

Deno.test("evaluateTargets() shows beside the Responses stream's ratio what the floor and the JS relay paid for the same two answers", () => {
  const figures = run(GOOD);
  const direct = measured(20, 20_000);
  const swap = (c: Comparison) =>
    c.case === "messages_stream" && c.concurrency === 64
      ? compare(c.case, 64, direct, measured(500), measured(200), measured(400))
      : c.case === "responses_stream"
      ? compare(c.case, 64, direct, measured(800), measured(300), measured(760))
      : c;
  const targets = evaluateTargets({ ...figures, comparisons: figures.comparisons.map(swap) });
  const target = targets.find((t) => t.name === "responses_stream: CPU per request vs messages_stream at c=64")!;
  assert.deepEqual([target.value, target.status, target.floor], ["1.60x", "fail", "floor 1.50x, JS relay 1.90x"]);
  // A pair measured without references still says so.
  const translated = targets.find((t) => t.name === "translated_stream: CPU per request vs messages_stream at c=64")!;
  assert.equal(translated.floor, "n/a");
});

/**
 * @module The benchmark's arithmetic, kept pure: statistics over repeats, gateway-versus-direct comparisons,
 * and the printed table (the targets are judged in targets.ts).
 */
import type { OpenStreamsSide } from "./open_streams.ts";
import { EVENTS_PER_STREAM } from "./setup.ts";
import type { WrkResult } from "./wrk.ts";

/** One target's verdict. */
export interface Target {
  name: string;
  value: string;
  limit: string;
  status: "pass" | "fail" | "unavailable";
  /** The same figure for the floor proxy; "n/a" when it was not measured or has no floor counterpart. */
  floor: string;
}

/** Mean, range and spread ((max - min) / mean, in percent) of one figure over the repeats. */
export interface Stat {
  mean: number;
  min: number;
  max: number;
  spreadPct: number;
}

/** Statistics over repeated values; NaN everywhere for none. */
export function stat(values: readonly number[]): Stat {
  if (values.length === 0) return { mean: NaN, min: NaN, max: NaN, spreadPct: NaN };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const min = Math.min(...values);
  const max = Math.max(...values);
  return { mean, min, max, spreadPct: mean === 0 ? 0 : ((max - min) / mean) * 100 };
}

/** The value at percentile `p` (0-100) by nearest rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/**
 * The middle value, of an even count the upper of the two; NaN for no values. Not {@linkcode percentile} at 50, which
 * takes the lower: the single benchmarks (bodies, answers, flood, redact) have always printed this one.
 */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** One side (direct or through the gateway) of a case at one concurrency, over its repeats. */
export interface Side {
  rps: Stat;
  p50Ms: Stat;
  p99Ms: Stat;
  /**
   * CPU of the serving process per request (the fake upstream direct, the gateway through it): unlike
   * requests/s this barely moves when other work shares the machine.
   */
  cpuUsPerRequest: Stat;
  /** Non-2xx answers, socket errors and timeouts over all repeats. */
  errors: number;
}

/** Summarizes wrk runs of one side. */
export function side(runs: readonly WrkResult[]): Side {
  return {
    rps: stat(runs.map((r) => r.rps)),
    p50Ms: stat(runs.map((r) => r.latencyUs.p50 / 1000)),
    p99Ms: stat(runs.map((r) => r.latencyUs.p99 / 1000)),
    cpuUsPerRequest: stat(runs.flatMap((r) => r.serverCpuUsPerRequest ?? [])),
    errors: runs.reduce((n, r) => n + Object.values(r.errors).reduce((a, b) => a + b, 0), 0),
  };
}

/** A case at one concurrency: direct to the upstream and through the gateway. */
export interface Comparison {
  case: string;
  concurrency: number;
  direct: Side;
  /** Undefined when the gateway cannot serve the case (e.g. a translator not yet written). */
  gateway?: Side;
  /** Why the gateway side is missing. */
  unavailable?: string;
  /** The floor proxy (a bare fetch relay) on the same path, when measured. */
  floor?: Side;
  /** The floor's bare JS relay variant (every chunk read and re-sent in JS), for the long stream. */
  jsRelay?: Side;
  /** Gateway requests/s over direct requests/s. */
  throughputRatio: number;
  addedP50Ms: number;
  addedP99Ms: number;
  /** The same two figures for the floor proxy; NaN when it was not measured. */
  floorRatio: number;
  floorAddedP50Ms: number;
  floorAddedP99Ms: number;
}

/** Compares the gateway side (and the floor proxy, when measured) of a case with the direct side. */
export function compare(
  name: string,
  concurrency: number,
  direct: Side,
  gateway: Side | { unavailable: string },
  floor?: Side,
  jsRelay?: Side,
): Comparison {
  const floorFigures = {
    floor,
    ...jsRelay ? { jsRelay } : {},
    floorRatio: floor ? floor.rps.mean / direct.rps.mean : NaN,
    floorAddedP50Ms: floor ? floor.p50Ms.mean - direct.p50Ms.mean : NaN,
    floorAddedP99Ms: floor ? floor.p99Ms.mean - direct.p99Ms.mean : NaN,
  };
  if ("unavailable" in gateway) {
    return {
      case: name,
      concurrency,
      direct,
      unavailable: gateway.unavailable,
      throughputRatio: NaN,
      addedP50Ms: NaN,
      addedP99Ms: NaN,
      ...floorFigures,
    };
  }
  return {
    case: name,
    concurrency,
    direct,
    gateway,
    throughputRatio: gateway.rps.mean / direct.rps.mean,
    addedP50Ms: gateway.p50Ms.mean - direct.p50Ms.mean,
    addedP99Ms: gateway.p99Ms.mean - direct.p99Ms.mean,
    ...floorFigures,
  };
}

/** Time to first byte of a streamed case, sequential requests, in milliseconds. */
export interface Ttfb {
  case: string;
  directP50Ms: number;
  directP99Ms: number;
  gatewayP50Ms?: number;
  gatewayP99Ms?: number;
  /** The floor proxy's p50, when measured. */
  floorP50Ms?: number;
  unavailable?: string;
}

/** The gateway's memory: its peak, and its RSS after a number of requests it has served. */
export interface Memory {
  peakRssBytes: number;
  /** The floor proxy's peak, when measured: what the runtime's own HTTP hop holds under the same load. */
  floorPeakRssBytes?: number;
  /** RSS once started, before any request. */
  startRssBytes?: number;
  /** Idle RSS: a few seconds after the first request of each case, on a fresh process; the floor's the same way. */
  idleRssBytes?: number;
  floorIdleRssBytes?: number;
  rssAfter: { requests: number; rssBytes: number }[];
}

const MB = 1024 * 1024;

/** How long a fresh process sits idle after its first requests before its idle RSS is read. */
export const IDLE_SETTLE_MS = 3000;

/** A number with `digits` decimals and a unit, or "n/a" when it is not a number. */
export function fixed(value: number, digits: number, unit = ""): string {
  return Number.isFinite(value) ? `${value.toFixed(digits)}${unit}` : "n/a";
}

function withSpread(s: Stat, digits: number): string {
  if (!Number.isFinite(s.mean)) return "n/a";
  const spread = s.spreadPct > 0 ? ` ±${(s.spreadPct / 2).toFixed(0)}%` : "";
  return `${s.mean.toFixed(digits)}${spread}`;
}

function signed(value: number, digits: number): string {
  return Number.isFinite(value) ? `${value >= 0 ? "+" : ""}${value.toFixed(digits)}` : "n/a";
}

/** Left-aligns the first column and right-aligns the rest. */
export function formatColumns(rows: readonly string[][]): string {
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => (row[col] ?? "").length)));
  return rows.map((row) =>
    row.map((cell, col) => (col === 0 ? cell.padEnd(widths[col]) : cell.padStart(widths[col]))).join("  ")
      .trimEnd()
  ).join("\n");
}

/** CPU per event of the long cases, each side, at their concurrency. */
function perEventLines(comparisons: readonly Comparison[]): string[] {
  return comparisons.filter((c) => EVENTS_PER_STREAM[c.case]).map((c) => {
    const per = (side?: Side) => fixed((side?.cpuUsPerRequest.mean ?? NaN) / EVENTS_PER_STREAM[c.case], 2, " us");
    return `${c.case} (${EVENTS_PER_STREAM[c.case]} events) at c=${c.concurrency}, CPU per event: upstream ${
      per(c.direct)
    }, floor ${per(c.floor)}, bare JS relay ${per(c.jsRelay)}, gateway ${per(c.gateway)}`;
  });
}

/** The open-streams waves, one row per side. */
function openStreamsTable(sides: readonly OpenStreamsSide[]): string[] {
  if (sides.length === 0) return [];
  return [
    `Open streams: ${sides[0].streams} paced streams at once, each process fresh and warmed up`,
    formatColumns([
      ["side", "complete", "events", "RSS before", "RSS peak", "KiB/stream", "us CPU/event", "seconds"],
      ...sides.map((o) => [
        o.side,
        `${o.completed}/${o.streams}`,
        String(o.events),
        fixed(o.rssBeforeBytes / MB, 1, " MB"),
        fixed(o.rssPeakBytes / MB, 1, " MB"),
        fixed(o.rssPerStreamBytes / 1024, 1),
        fixed(o.cpuUsPerEvent, 1),
        fixed(o.seconds, 1),
      ]),
    ]),
    "",
  ];
}

/** The printed report: throughput and latency per case, TTFB, memory, open streams, targets. */
export function renderReport(input: {
  comparisons: readonly Comparison[];
  ttfb: readonly Ttfb[];
  memory: Memory;
  targets: readonly Target[];
  openStreams?: readonly OpenStreamsSide[];
}): string {
  const head = ["case", "c", "direct rps", "floor rps", "gateway rps", "floor/direct", "gw/direct", "direct p50"];
  head.push("floor +p50", "gw +p50", "floor +p99", "gw +p99", "upstream cpu", "floor cpu", "gw cpu");
  const rows = input.comparisons.map((c) => [
    c.case,
    String(c.concurrency),
    withSpread(c.direct.rps, 0),
    c.floor ? withSpread(c.floor.rps, 0) : "n/a",
    c.gateway ? withSpread(c.gateway.rps, 0) : "unavailable",
    fixed(c.floorRatio * 100, 0, "%"),
    fixed(c.throughputRatio * 100, 0, "%"),
    fixed(c.direct.p50Ms.mean, 3),
    signed(c.floorAddedP50Ms, 3),
    signed(c.addedP50Ms, 3),
    signed(c.floorAddedP99Ms, 3),
    signed(c.addedP99Ms, 3),
    fixed(c.direct.cpuUsPerRequest.mean, 0),
    c.floor ? fixed(c.floor.cpuUsPerRequest.mean, 0) : "n/a",
    c.gateway ? fixed(c.gateway.cpuUsPerRequest.mean, 0) : "n/a",
  ]);
  const ttfbRows = input.ttfb.map((t) => [
    t.case,
    fixed(t.directP50Ms, 3),
    signed((t.floorP50Ms ?? NaN) - t.directP50Ms, 3),
    fixed(t.gatewayP50Ms ?? NaN, 3),
    signed((t.gatewayP50Ms ?? NaN) - t.directP50Ms, 3),
    fixed(t.directP99Ms, 3),
    fixed(t.gatewayP99Ms ?? NaN, 3),
  ]);
  const memory = [
    `gateway peak RSS (VmHWM): ${fixed(input.memory.peakRssBytes / MB, 1)} MB`,
    ...(input.memory.floorPeakRssBytes
      ? [`floor proxy peak RSS (VmHWM): ${fixed(input.memory.floorPeakRssBytes / MB, 1)} MB`]
      : []),
    ...(input.memory.startRssBytes ? [`RSS at start: ${fixed(input.memory.startRssBytes / MB, 1)} MB`] : []),
    ...(input.memory.idleRssBytes
      ? [
        `RSS idle (fresh process, ${IDLE_SETTLE_MS / 1000} s after the first request of each case): gateway ${
          fixed(input.memory.idleRssBytes / MB, 1)
        } MB, floor proxy ${fixed((input.memory.floorIdleRssBytes ?? NaN) / MB, 1)} MB`,
      ]
      : []),
    ...input.memory.rssAfter.map((m) => `RSS after ${m.requests} requests: ${fixed(m.rssBytes / MB, 1)} MB`),
  ];
  const targets = input.targets.map((t) => [t.name, t.value, t.limit, t.status.toUpperCase(), t.floor]);
  return [
    "Throughput and latency (mean over repeats, ± half the spread; latencies in ms; cpu: us of CPU per request",
    "of the serving process, all threads: the fake upstream direct, the floor proxy and the gateway through it;",
    "floor: a bare fetch relay on the gateway's core, the least any gateway on this runtime costs)",
    formatColumns([head, ...rows]),
    ...perEventLines(input.comparisons),
    "",
    "Time to first byte, sequential streamed requests (ms)",
    formatColumns([
      ["case", "direct p50", "floor +p50", "gw p50", "gw +p50", "direct p99", "gw p99"],
      ...ttfbRows,
    ]),
    "",
    ...memory,
    "",
    ...openStreamsTable(input.openStreams ?? []),
    "Targets (floor: the same figure for the floor proxy; for the long stream, its bare JS relay variant)",
    formatColumns([["target", "value", "limit", "verdict", "floor"], ...targets]),
  ].join("\n");
}

/**
 * @module The benchmark's arithmetic, kept pure: statistics over repeats, gateway-versus-direct comparisons,
 * the targets' pass/fail, and the printed table.
 */
import type { WrkResult } from "./wrk.ts";

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
  /** Gateway requests/s over direct requests/s. */
  throughputRatio: number;
  addedP50Ms: number;
  addedP99Ms: number;
}

/** Compares the two sides of a case. */
export function compare(
  name: string,
  concurrency: number,
  direct: Side,
  gateway: Side | { unavailable: string },
): Comparison {
  if ("unavailable" in gateway) {
    return {
      case: name,
      concurrency,
      direct,
      unavailable: gateway.unavailable,
      throughputRatio: NaN,
      addedP50Ms: NaN,
      addedP99Ms: NaN,
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
  };
}

/** Time to first byte of a streamed case, sequential requests, in milliseconds. */
export interface Ttfb {
  case: string;
  directP50Ms: number;
  directP99Ms: number;
  gatewayP50Ms?: number;
  gatewayP99Ms?: number;
  unavailable?: string;
}

/** The gateway's memory: its peak, and its RSS after a number of requests it has served. */
export interface Memory {
  peakRssBytes: number;
  /** RSS once started, before any request. */
  startRssBytes?: number;
  rssAfter: { requests: number; rssBytes: number }[];
}

/** One target's verdict. */
export interface Target {
  name: string;
  value: string;
  limit: string;
  status: "pass" | "fail" | "unavailable";
}

/** RSS may move this much between the two soak checkpoints before it counts as growth (GC heaps breathe). */
export const RSS_GROWTH_TOLERANCE = 0.1;

const MB = 1024 * 1024;

function verdict(ok: boolean | undefined): Target["status"] {
  return ok === undefined ? "unavailable" : ok ? "pass" : "fail";
}

function fixed(value: number, digits: number, unit = ""): string {
  return Number.isFinite(value) ? `${value.toFixed(digits)}${unit}` : "n/a";
}

/** The targets, judged on ratios measured in the same run. */
export function evaluateTargets(input: { comparisons: readonly Comparison[]; ttfb: readonly Ttfb[]; memory: Memory }) {
  const find = (name: string, c: number) => input.comparisons.find((x) => x.case === name && x.concurrency === c);
  const targets: Target[] = [];
  for (const name of ["messages", "messages_stream"]) {
    const at64 = find(name, 64);
    const ratio = at64?.throughputRatio ?? NaN;
    targets.push({
      name: `${name}: gateway/direct throughput at c=64`,
      value: fixed(ratio * 100, 0, "%"),
      limit: ">= 30%",
      status: verdict(Number.isFinite(ratio) ? ratio >= 0.3 : undefined),
    });
  }
  const added = find("messages", 1)?.addedP50Ms ?? NaN;
  targets.push({
    name: "messages: added p50 at c=1",
    value: fixed(added, 3, " ms"),
    limit: "<= 0.2 ms",
    status: verdict(Number.isFinite(added) ? added <= 0.2 : undefined),
  });
  const ttfb = input.ttfb.find((t) => t.case === "messages_stream");
  const addedTtfb = ttfb?.gatewayP50Ms !== undefined ? ttfb.gatewayP50Ms - ttfb.directP50Ms : NaN;
  targets.push({
    name: "messages_stream: added TTFB p50",
    value: fixed(addedTtfb, 3, " ms"),
    limit: "<= 0.5 ms",
    status: verdict(Number.isFinite(addedTtfb) ? addedTtfb <= 0.5 : undefined),
  });
  const peak = input.memory.peakRssBytes;
  targets.push({
    name: "gateway peak RSS",
    value: fixed(peak / MB, 1, " MB"),
    limit: "<= 100 MB",
    status: verdict(peak > 0 ? peak <= 100 * MB : undefined),
  });
  const [first, last] = [input.memory.rssAfter[0], input.memory.rssAfter.at(-1)];
  const growth = first && last && last !== first ? (last.rssBytes - first.rssBytes) / first.rssBytes : NaN;
  targets.push({
    name: first && last ? `RSS growth ${first.requests} -> ${last.requests} requests` : "RSS growth",
    value: fixed(growth * 100, 1, "%"),
    limit: `<= ${RSS_GROWTH_TOLERANCE * 100}%`,
    status: verdict(Number.isFinite(growth) ? growth <= RSS_GROWTH_TOLERANCE : undefined),
  });
  for (const [translated, passthrough] of [["translated", "messages"], ["translated_stream", "messages_stream"]]) {
    const costRatio = costPerRequest(find(translated, 64)) / costPerRequest(find(passthrough, 64));
    targets.push({
      name: `${translated}: cost per request vs ${passthrough} at c=64`,
      value: fixed(costRatio, 2, "x"),
      limit: "<= 2x",
      status: verdict(Number.isFinite(costRatio) ? costRatio <= 2 : undefined),
    });
  }
  return targets;
}

/**
 * The gateway's cost per request at a concurrency: its CPU per request when measured, else 1 / requests per
 * second (at 64 connections its core is saturated, so the two agree when nothing else runs).
 */
function costPerRequest(c: Comparison | undefined): number {
  if (!c?.gateway) return NaN;
  const cpu = c.gateway.cpuUsPerRequest.mean;
  return Number.isFinite(cpu) ? cpu : 1e6 / c.gateway.rps.mean;
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

/** The printed report: throughput and latency per case, TTFB, memory, targets. */
export function renderReport(input: {
  comparisons: readonly Comparison[];
  ttfb: readonly Ttfb[];
  memory: Memory;
  targets: readonly Target[];
}): string {
  const head = [
    "case",
    "c",
    "direct rps",
    "gateway rps",
    "gw/direct",
    "direct p50",
    "gw p50",
    "+p50 ms",
    "+p99 ms",
    "upstream cpu",
    "gw cpu",
  ];
  const rows = input.comparisons.map((c) => [
    c.case,
    String(c.concurrency),
    withSpread(c.direct.rps, 0),
    c.gateway ? withSpread(c.gateway.rps, 0) : "unavailable",
    fixed(c.throughputRatio * 100, 0, "%"),
    fixed(c.direct.p50Ms.mean, 3),
    c.gateway ? fixed(c.gateway.p50Ms.mean, 3) : "n/a",
    signed(c.addedP50Ms, 3),
    signed(c.addedP99Ms, 3),
    fixed(c.direct.cpuUsPerRequest.mean, 0),
    c.gateway ? fixed(c.gateway.cpuUsPerRequest.mean, 0) : "n/a",
  ]);
  const ttfbRows = input.ttfb.map((t) => [
    t.case,
    fixed(t.directP50Ms, 3),
    fixed(t.gatewayP50Ms ?? NaN, 3),
    signed((t.gatewayP50Ms ?? NaN) - t.directP50Ms, 3),
    fixed(t.directP99Ms, 3),
    fixed(t.gatewayP99Ms ?? NaN, 3),
  ]);
  const memory = [
    `gateway peak RSS (VmHWM): ${fixed(input.memory.peakRssBytes / MB, 1)} MB`,
    ...(input.memory.startRssBytes ? [`RSS at start: ${fixed(input.memory.startRssBytes / MB, 1)} MB`] : []),
    ...input.memory.rssAfter.map((m) => `RSS after ${m.requests} requests: ${fixed(m.rssBytes / MB, 1)} MB`),
  ];
  const targets = input.targets.map((t) => [t.name, t.value, t.limit, t.status.toUpperCase()]);
  return [
    "Throughput and latency (mean over repeats, ± half the spread; latencies in ms; cpu: us of CPU per request",
    "of the serving process, all threads: the fake upstream direct, the gateway through it)",
    formatColumns([head, ...rows]),
    "",
    "Time to first byte, sequential streamed requests (ms)",
    formatColumns([["case", "direct p50", "gw p50", "+p50", "direct p99", "gw p99"], ...ttfbRows]),
    "",
    ...memory,
    "",
    "Targets",
    formatColumns([["target", "value", "limit", "verdict"], ...targets]),
  ].join("\n");
}

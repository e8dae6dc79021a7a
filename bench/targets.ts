/**
 * @module The targets judged on ratios measured in one run, each shown beside the same figure for the
 * floor proxy (a bare fetch relay), so a reader can tell a target the gateway misses from one that the extra
 * HTTP hop alone already misses.
 */
import { type Comparison, fixed, type Memory, type Ttfb } from "./report.ts";

/** One target's verdict. */
export interface Target {
  name: string;
  value: string;
  limit: string;
  status: "pass" | "fail" | "unavailable";
  /** The same figure for the floor proxy; "n/a" when it was not measured or has no floor counterpart. */
  floor: string;
}

/** RSS may move this much between the two soak checkpoints before it counts as growth (GC heaps breathe). */
export const RSS_GROWTH_TOLERANCE = 0.1;

/** Requests after which RSS must stop growing (the first soak checkpoint of a full run). */
export const RSS_SETTLED_AFTER = 10_000;

const MB = 1024 * 1024;

function verdict(ok: boolean | undefined): Target["status"] {
  return ok === undefined ? "unavailable" : ok ? "pass" : "fail";
}

/** The targets, judged on ratios measured in the same run. */
export function evaluateTargets(
  input: { comparisons: readonly Comparison[]; ttfb: readonly Ttfb[]; memory: Memory },
): Target[] {
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
      floor: fixed((at64?.floorRatio ?? NaN) * 100, 0, "%"),
    });
  }
  const atOne = find("messages", 1);
  const added = atOne?.addedP50Ms ?? NaN;
  targets.push({
    name: "messages: added p50 at c=1",
    value: fixed(added, 3, " ms"),
    limit: "<= 0.2 ms",
    status: verdict(Number.isFinite(added) ? added <= 0.2 : undefined),
    floor: fixed(atOne?.floorAddedP50Ms ?? NaN, 3, " ms"),
  });
  const ttfb = input.ttfb.find((t) => t.case === "messages_stream");
  const addedTtfb = ttfb?.gatewayP50Ms !== undefined ? ttfb.gatewayP50Ms - ttfb.directP50Ms : NaN;
  targets.push({
    name: "messages_stream: added TTFB p50",
    value: fixed(addedTtfb, 3, " ms"),
    limit: "<= 0.5 ms",
    status: verdict(Number.isFinite(addedTtfb) ? addedTtfb <= 0.5 : undefined),
    floor: fixed(ttfb?.floorP50Ms !== undefined ? ttfb.floorP50Ms - ttfb.directP50Ms : NaN, 3, " ms"),
  });
  const peak = input.memory.peakRssBytes;
  targets.push({
    name: "gateway peak RSS",
    value: fixed(peak / MB, 1, " MB"),
    limit: "<= 100 MB",
    status: verdict(peak > 0 ? peak <= 100 * MB : undefined),
    floor: fixed((input.memory.floorPeakRssBytes ?? NaN) / MB, 1, " MB"),
  });
  const [first, last] = [input.memory.rssAfter[0], input.memory.rssAfter.at(-1)];
  const growth = first && last && last !== first ? (last.rssBytes - first.rssBytes) / first.rssBytes : NaN;
  // The target is no growth from 10,000 requests on; a shorter soak (--quick) ends while the heap still settles.
  const settled = first !== undefined && first.requests >= RSS_SETTLED_AFTER;
  targets.push({
    name: first && last ? `RSS growth ${first.requests} -> ${last.requests} requests` : "RSS growth",
    value: fixed(growth * 100, 1, "%"),
    limit: `<= ${RSS_GROWTH_TOLERANCE * 100}%`,
    status: verdict(Number.isFinite(growth) && settled ? growth <= RSS_GROWTH_TOLERANCE : undefined),
    floor: "n/a",
  });
  for (const [translated, passthrough] of [["translated", "messages"], ["translated_stream", "messages_stream"]]) {
    const costRatio = costPerRequest(find(translated, 64)) / costPerRequest(find(passthrough, 64));
    targets.push({
      name: `${translated}: cost per request vs ${passthrough} at c=64`,
      value: fixed(costRatio, 2, "x"),
      limit: "<= 2x",
      status: verdict(Number.isFinite(costRatio) ? costRatio <= 2 : undefined),
      floor: "n/a",
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

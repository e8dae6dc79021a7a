/**
 * @module The targets judged on ratios measured in one run, each shown beside the same figure for the
 * floor proxy (a bare fetch relay on the same core): the gateway's CPU per request and per event, its memory per
 * open stream and at its peak, and its time to first byte, each at most a stated distance from the floor's.
 */
import type { OpenStreamsSide } from "./open_streams.ts";
import { type Comparison, fixed, type Memory, type Ttfb } from "./report.ts";
import { EVENTS_PER_STREAM } from "./setup.ts";

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

/** How far above the floor the gateway may be: CPU and memory per unit of work, peak RSS, time to first byte. */
export const LIMITS = { perUnit: 1.5, translated: 2, peakRssMb: 40, ttfbMs: 0.1 };

const MB = 1024 * 1024;

function verdict(ok: boolean | undefined): Target["status"] {
  return ok === undefined ? "unavailable" : ok ? "pass" : "fail";
}

/** A gateway figure judged as at most `LIMITS.perUnit` times the floor's. */
function perUnit(name: string, gateway: number, floor: number, unit: string, digits: number): Target {
  const ratio = gateway / floor;
  const known = Number.isFinite(ratio) && floor > 0;
  return {
    name,
    value: `${fixed(gateway, digits, unit)} (${fixed(ratio, 2, "x")})`,
    limit: `<= ${LIMITS.perUnit}x floor`,
    status: verdict(known ? ratio <= LIMITS.perUnit : undefined),
    floor: fixed(floor, digits, unit),
  };
}

/** CPU per request (per event for long cases) of one side. */
function cpuOf(c: Comparison | undefined, side: "gateway" | "floor"): number {
  const events = c ? EVENTS_PER_STREAM[c.case] ?? 1 : 1;
  return (c?.[side]?.cpuUsPerRequest.mean ?? NaN) / events;
}

/** The targets, judged on ratios measured in the same run. */
export function evaluateTargets(input: {
  comparisons: readonly Comparison[];
  ttfb: readonly Ttfb[];
  memory: Memory;
  openStreams?: readonly OpenStreamsSide[];
}): Target[] {
  const find = (name: string, c: number) => input.comparisons.find((x) => x.case === name && x.concurrency === c);
  const targets: Target[] = [];
  for (const name of ["messages", "messages_stream"]) {
    const at64 = find(name, 64);
    targets.push(
      perUnit(`${name}: CPU per request at c=64`, cpuOf(at64, "gateway"), cpuOf(at64, "floor"), " us", 0),
    );
  }
  for (const [translated, passthrough] of [["translated", "messages"], ["translated_stream", "messages_stream"]]) {
    const costRatio = cpuOf(find(translated, 64), "gateway") / cpuOf(find(passthrough, 64), "gateway");
    targets.push({
      name: `${translated}: CPU per request vs ${passthrough} at c=64`,
      value: fixed(costRatio, 2, "x"),
      limit: `<= ${LIMITS.translated}x`,
      status: verdict(Number.isFinite(costRatio) ? costRatio <= LIMITS.translated : undefined),
      floor: "n/a",
    });
  }
  // The long stream runs at its own concurrency only.
  const long = input.comparisons.find((x) => x.case === "long_stream");
  targets.push(
    perUnit(
      `long_stream: CPU per event at c=${long?.concurrency ?? "?"}`,
      cpuOf(long, "gateway"),
      cpuOf(long, "floor"),
      " us",
      2,
    ),
  );
  const open = (side: string) => input.openStreams?.find((o) => o.side === side);
  const [gatewayOpen, floorOpen] = [open("gateway"), open("floor")];
  targets.push(
    perUnit(
      "open streams: RSS per open stream",
      (gatewayOpen?.rssPerStreamBytes ?? NaN) / 1024,
      (floorOpen?.rssPerStreamBytes ?? NaN) / 1024,
      " KiB",
      1,
    ),
    perUnit(
      "open streams: CPU per event",
      gatewayOpen?.cpuUsPerEvent ?? NaN,
      floorOpen?.cpuUsPerEvent ?? NaN,
      " us",
      1,
    ),
  );
  const ttfb = input.ttfb.find((t) => t.case === "messages_stream");
  const addedTtfb = ttfb?.gatewayP50Ms !== undefined ? ttfb.gatewayP50Ms - ttfb.directP50Ms : NaN;
  const floorTtfb = ttfb?.floorP50Ms !== undefined ? ttfb.floorP50Ms - ttfb.directP50Ms : NaN;
  targets.push({
    name: "messages_stream: added TTFB p50",
    value: fixed(addedTtfb, 3, " ms"),
    limit: `<= floor + ${LIMITS.ttfbMs} ms`,
    status: verdict(Number.isFinite(addedTtfb + floorTtfb) ? addedTtfb <= floorTtfb + LIMITS.ttfbMs : undefined),
    floor: fixed(floorTtfb, 3, " ms"),
  });
  const peak = input.memory.peakRssBytes / MB;
  const floorPeak = (input.memory.floorPeakRssBytes ?? NaN) / MB;
  targets.push({
    name: "gateway peak RSS",
    value: fixed(peak, 1, " MB"),
    limit: `<= floor + ${LIMITS.peakRssMb} MB`,
    status: verdict(Number.isFinite(peak + floorPeak) && peak > 0 ? peak <= floorPeak + LIMITS.peakRssMb : undefined),
    floor: fixed(floorPeak, 1, " MB"),
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
  return targets;
}

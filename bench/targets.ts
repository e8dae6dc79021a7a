/**
 * @module The targets judged on figures measured in one run, each shown beside the same figure for the floor proxy
 * (a bare fetch relay on the same core): the gateway's CPU per request and per event, its added p99 latency, and its
 * memory at idle, at its peak, with many open streams and with large bodies in flight.
 */
import type { OpenStreamsSide } from "./open_streams.ts";
import { type Comparison, fixed, type Memory, type Target, type Ttfb } from "./report.ts";
import { EVENTS_PER_STREAM } from "./setup.ts";

/** One large-bodies case (bench:bodies): peak RSS growth over the bytes of the bodies in flight, median of rounds. */
export interface BodiesResult {
  name: string;
  count: number;
  sizeMb: number;
  ratios: number[];
  median: number;
}

/** RSS may move this much between the two soak checkpoints before it counts as growth (GC heaps breathe). */
export const RSS_GROWTH_TOLERANCE = 0.1;

/** Requests after which RSS must stop growing (the first soak checkpoint of a full run). */
export const RSS_SETTLED_AFTER = 10_000;

/**
 * How far the gateway may be from its reference: CPU per request as a multiple of the floor's (non-streamed and
 * streamed), CPU per event of the long stream as a multiple of the bare JS relay's, added p99 at c=16 as a multiple
 * of the floor's, peak RSS and RSS with open streams in MB above the floor's, idle RSS in MB, peak RSS growth under
 * large bodies as a multiple of the bodies' bytes, under one large streamed answer as a multiple of the answer's
 * size (bench:bodies), and a translated case's CPU as a multiple of its passthrough's.
 */
export const LIMITS = {
  cpu: 2,
  cpuStream: 2.5,
  perEventVsJsRelay: 1.15,
  p99: 2,
  p99Concurrency: 16,
  peakRssMb: 60,
  idleRssMb: 70,
  openStreamsMb: 80,
  bodies: 2.5,
  answer: 4,
  translated: 2,
  responsesPassthrough: 1.1,
  /** An embeddings request of 16 inputs, against the Messages passthrough. */
  embeddings: 1.2,
};

const MB = 1024 * 1024;

function verdict(ok: boolean | undefined): Target["status"] {
  return ok === undefined ? "unavailable" : ok ? "pass" : "fail";
}

/** A gateway figure judged as at most `limit` times a reference figure (the floor's unless named). */
function ratioTarget(
  name: string,
  figures: { gateway: number; reference: number; limit: number; unit: string; digits: number; of?: string },
): Target {
  const { gateway, reference, limit, unit, digits } = figures;
  const ratio = gateway / reference;
  const known = Number.isFinite(ratio) && reference > 0;
  return {
    name,
    value: `${fixed(gateway, digits, unit)} (${fixed(ratio, 2, "x")})`,
    limit: `<= ${limit}x ${figures.of ?? "floor"}`,
    status: verdict(known ? ratio <= limit : undefined),
    floor: fixed(reference, digits, unit),
  };
}

/** A gateway RSS judged as at most the floor's plus `mb`. */
function aboveFloor(name: string, gatewayBytes: number, floorBytes: number, mb: number): Target {
  const [gateway, floor] = [gatewayBytes / MB, floorBytes / MB];
  const known = Number.isFinite(gateway + floor) && gateway > 0 && floor > 0;
  return {
    name,
    value: `${fixed(gateway, 1, " MB")} (floor + ${fixed(gateway - floor, 1)})`,
    limit: `<= floor + ${mb} MB`,
    status: verdict(known ? gateway <= floor + mb : undefined),
    floor: fixed(floor, 1, " MB"),
  };
}

/** CPU per request (per event for long cases) of one side. */
function cpuOf(c: Comparison | undefined, side: "gateway" | "floor" | "jsRelay"): number {
  const events = c ? EVENTS_PER_STREAM[c.case] ?? 1 : 1;
  return (c?.[side]?.cpuUsPerRequest.mean ?? NaN) / events;
}

/** The targets, judged on figures measured in the same run. */
export function evaluateTargets(input: {
  comparisons: readonly Comparison[];
  ttfb: readonly Ttfb[];
  memory: Memory;
  openStreams?: readonly OpenStreamsSide[];
  bodies?: readonly BodiesResult[];
}): Target[] {
  const find = (name: string, c: number) => input.comparisons.find((x) => x.case === name && x.concurrency === c);
  const targets: Target[] = [];
  for (const [name, limit] of [["messages", LIMITS.cpu], ["messages_stream", LIMITS.cpuStream]] as const) {
    const at64 = find(name, 64);
    targets.push(ratioTarget(`${name}: CPU per request at c=64`, {
      gateway: cpuOf(at64, "gateway"),
      reference: cpuOf(at64, "floor"),
      limit,
      unit: " us",
      digits: 0,
    }));
  }
  // A translated case against the passthrough of its client's protocol, and the Responses passthrough against the
  // Messages one: each as the gateway's CPU per request of one over the other's.
  const pairs = [
    ["translated", "messages", LIMITS.translated],
    ["translated_stream", "messages_stream", LIMITS.translated],
    ["responses", "messages", LIMITS.responsesPassthrough],
    ["responses_stream", "messages_stream", LIMITS.responsesPassthrough],
    ["translated_responses", "responses", LIMITS.translated],
    ["translated_responses_stream", "responses_stream", LIMITS.translated],
    ["embeddings", "messages", LIMITS.embeddings],
  ] as const;
  for (const [measured, passthrough, limit] of pairs) {
    const ratio = (side: "gateway" | "floor" | "jsRelay") =>
      cpuOf(find(measured, 64), side) / cpuOf(find(passthrough, 64), side);
    const costRatio = ratio("gateway");
    // What relays that do nothing but carry the bytes paid for the same two answers in the same run: the part of the
    // ratio that comes from the answers themselves (their bytes, the reads they arrive in), not from the gateway.
    const references = ([["floor", "floor"], ["jsRelay", "JS relay"]] as const)
      .filter(([side]) => Number.isFinite(ratio(side)))
      .map(([side, label]) => `${label} ${fixed(ratio(side), 2, "x")}`);
    targets.push({
      name: `${measured}: CPU per request vs ${passthrough} at c=64`,
      value: fixed(costRatio, 2, "x"),
      limit: `<= ${limit}x`,
      status: verdict(Number.isFinite(costRatio) ? costRatio <= limit : undefined),
      floor: references.length > 0 ? references.join(", ") : "n/a",
    });
  }
  // The long stream runs at its own concurrency only; its reference is the floor's bare JS relay variant.
  const long = input.comparisons.find((x) => x.case === "long_stream");
  targets.push(ratioTarget(`long_stream: CPU per event at c=${long?.concurrency ?? "?"}`, {
    gateway: cpuOf(long, "gateway"),
    reference: cpuOf(long, "jsRelay"),
    limit: LIMITS.perEventVsJsRelay,
    unit: " us",
    digits: 2,
    of: "JS relay",
  }));
  for (const name of ["messages", "messages_stream"]) {
    const c = find(name, LIMITS.p99Concurrency);
    targets.push(ratioTarget(`${name}: added p99 at c=${LIMITS.p99Concurrency}`, {
      gateway: c?.addedP99Ms ?? NaN,
      reference: c?.floorAddedP99Ms ?? NaN,
      limit: LIMITS.p99,
      unit: " ms",
      digits: 2,
    }));
  }
  const { memory } = input;
  targets.push(aboveFloor("gateway peak RSS", memory.peakRssBytes, memory.floorPeakRssBytes ?? NaN, LIMITS.peakRssMb));
  const idle = (memory.idleRssBytes ?? NaN) / MB;
  targets.push({
    name: "gateway idle RSS",
    value: fixed(idle, 1, " MB"),
    limit: `<= ${LIMITS.idleRssMb} MB`,
    status: verdict(Number.isFinite(idle) && idle > 0 ? idle <= LIMITS.idleRssMb : undefined),
    floor: fixed((memory.floorIdleRssBytes ?? NaN) / MB, 1, " MB"),
  });
  const open = (side: string) => input.openStreams?.find((o) => o.side === side);
  const [gatewayOpen, floorOpen] = [open("gateway"), open("floor")];
  targets.push(aboveFloor(
    `${gatewayOpen?.streams ?? "?"} open streams: peak RSS`,
    gatewayOpen?.rssPeakBytes ?? NaN,
    floorOpen?.rssPeakBytes ?? NaN,
    LIMITS.openStreamsMb,
  ));
  for (const name of ["passthrough", "translated"]) {
    const b = input.bodies?.find((x) => x.name === name);
    targets.push({
      name: b ? `${b.count} x ${b.sizeMb} MB bodies, ${name}: peak RSS growth` : `large bodies, ${name}`,
      value: b ? `${fixed(b.median, 2, "x")} the bodies` : "n/a",
      limit: `<= ${LIMITS.bodies}x`,
      status: verdict(b && Number.isFinite(b.median) ? b.median <= LIMITS.bodies : undefined),
      floor: "n/a",
    });
  }
  const [first, last] = [memory.rssAfter[0], memory.rssAfter.at(-1)];
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

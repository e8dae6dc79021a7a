/**
 * @module The measuring phases of one benchmark run: the RSS soak, the load runs of every case direct, through
 * the floor proxy and through the gateway at every concurrency and repeat, and the TTFB samples; then the report.
 */
import { type BenchOptions, FLOOR_CASE_NAMES, JS_RELAY_CASE_NAMES } from "./options.ts";
import { type ProcessSet, readMemory } from "./processes.ts";
import {
  compare,
  type Comparison,
  IDLE_SETTLE_MS,
  type Memory,
  percentile,
  renderReport,
  side,
  type Ttfb,
} from "./report.ts";
import { type BodiesResult, evaluateTargets } from "./targets.ts";
import { measureOpenStreams, type OpenStreamsSide } from "./open_streams.ts";
import {
  type BenchCase,
  PACED_TARGET,
  requestHeaders,
  sampleTtfb,
  type Service,
  type Target,
  tokenFor,
} from "./setup.ts";
import { type LoadRequest, runWrk, type WrkResult, wrkScript } from "./wrk.ts";

/** What the measuring phases need. */
export interface MeasureInput {
  options: BenchOptions;
  cases: readonly BenchCase[];
  /** Cases the gateway cannot serve, with the reason. */
  unavailable: ReadonlyMap<string, string>;
  processes: ProcessSet;
  upstream: Service;
  gateway: Service;
  /** The bare fetch relay measured beside the gateway; absent with --no-floor. */
  floor?: Service;
  /** The floor's bare JS relay variant, measured for the long stream; absent with --no-floor. */
  jsRelay?: Service;
  token: string;
  /** The token of the group with guardrails, for the guardrails cases. */
  guardedToken?: string;
  /** Scratch directory for the wrk scripts. */
  dir: string;
  /** Stops the gateway and the floor proxy and starts them afresh (for the open-streams case). */
  restart?(): Promise<{ gateway: Service; floor?: Service }>;
  /** The large-bodies phase (fresh gateways of its own), when the run includes it. */
  bodies?(): Promise<BodiesResult[]>;
}

/** One run of `load`, with the CPU per request of `server` when given. */
async function runLoad(
  input: MeasureInput,
  load: LoadRequest,
  connections: number,
  seconds: number,
  server?: Service,
): Promise<WrkResult> {
  const script = `${input.dir}/load-${crypto.randomUUID()}.lua`;
  await Deno.writeTextFile(script, wrkScript(load));
  const { result, cpuMs: [cpuMs] } = await runWrk(
    input.processes,
    { connections, seconds, script, url: load.url },
    server ? [server.process.pid] : [],
  );
  if (cpuMs !== undefined && result.requests > 0) result.serverCpuUsPerRequest = (cpuMs * 1000) / result.requests;
  return result;
}

function load(input: MeasureInput, service: Service, target: Target): LoadRequest {
  return { url: service.url + target.path, headers: requestHeaders(tokenFor(target, input)), body: target.body };
}

const MB = 1024 * 1024;

/**
 * Mixed streamed and non-streamed passthrough requests at 64 connections in one-second runs, RSS read once
 * the count passes each checkpoint (wrk cannot stop at a count: it always runs its full duration).
 */
async function soak(input: MeasureInput): Promise<Memory["rssAfter"]> {
  const plain = input.cases.find((c) => c.name === "messages");
  const stream = input.cases.find((c) => c.name === "messages_stream");
  if (!input.options.soak || !plain) return [];
  const rssAfter: Memory["rssAfter"] = [];
  const started = Date.now();
  let done = 0;
  let stalled = 0;
  for (const checkpoint of [Math.round(input.options.soak / 10), input.options.soak]) {
    while (done < checkpoint) {
      const result = await runLoad(
        input,
        { ...load(input, input.gateway, plain.gateway), altBody: stream?.gateway.body },
        64,
        1,
      );
      // One empty second can be a starved machine; three in a row is a gateway that answers nothing.
      stalled = result.requests === 0 ? stalled + 1 : 0;
      if (stalled === 3) {
        throw new Error(`The soak made no progress: the gateway answers nothing (wrk: ${JSON.stringify(result)})`);
      }
      done += result.requests;
    }
    const { rssBytes } = await readMemory(input.gateway.process.pid);
    rssAfter.push({ requests: done, rssBytes });
    const rate = Math.round(done / ((Date.now() - started) / 1000));
    console.log(`soak: ${done} requests (${rate}/s overall), gateway RSS ${(rssBytes / MB).toFixed(1)} MB`);
  }
  return rssAfter;
}

function line(result: WrkResult): string {
  const errors = Object.values(result.errors).reduce((a, b) => a + b, 0);
  const cpu = result.serverCpuUsPerRequest;
  return `${Math.round(result.rps)} rps p50 ${(result.latencyUs.p50 / 1000).toFixed(3)} ms p99 ${
    (result.latencyUs.p99 / 1000).toFixed(3)
  } ms${cpu === undefined ? "" : ` cpu ${Math.round(cpu)} us/req`}${errors ? ` ERRORS ${errors}` : ""}`;
}

/** Runs every phase and returns the printed report and the JSON to store. */
export async function measure(input: MeasureInput): Promise<{ text: string; json: Record<string, unknown> }> {
  const { options, cases, unavailable } = input;
  // The gateway and the floor are fresh and have served one request of each case (the probes): their idle RSS.
  const startRssBytes = (await readMemory(input.gateway.process.pid)).rssBytes;
  await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_MS));
  const idleRssBytes = (await readMemory(input.gateway.process.pid)).rssBytes;
  const floorIdleRssBytes = input.floor && (await readMemory(input.floor.process.pid)).rssBytes;
  const rssAfter = await soak(input);
  const runs = new Map<
    string,
    { direct: WrkResult[]; floor: WrkResult[]; jsRelay: WrkResult[]; gateway: WrkResult[] }
  >();
  const { floor, jsRelay } = input;
  const rssTimeline: { after: string; rssBytes: number }[] = [];
  const maxConcurrency = Math.max(...options.concurrency);
  const concurrencies = (c: BenchCase) => c.concurrency ? [c.concurrency] : options.concurrency;
  for (let repeat = 1; repeat <= options.repeats; repeat++) {
    for (const c of cases) {
      const viaGateway = !unavailable.has(c.name);
      if (repeat === 1 && options.warmup > 0) {
        const warm = c.concurrency ?? maxConcurrency;
        await runLoad(input, load(input, input.upstream, c.direct), warm, options.warmup);
        if (floor && FLOOR_CASE_NAMES.includes(c.name)) {
          await runLoad(input, load(input, floor, c.direct), warm, options.warmup);
        }
        if (jsRelay && JS_RELAY_CASE_NAMES.includes(c.name)) {
          await runLoad(input, load(input, jsRelay, c.direct), warm, options.warmup);
        }
        if (viaGateway) await runLoad(input, load(input, input.gateway, c.gateway), warm, options.warmup);
      }
      for (const concurrency of concurrencies(c)) {
        const key = `${c.name}|${concurrency}`;
        const entry = runs.get(key) ?? { direct: [], floor: [], jsRelay: [], gateway: [] };
        runs.set(key, entry);
        const measured = (server: Service, target: Target) =>
          runLoad(input, load(input, server, target), concurrency, options.duration, server);
        const direct = await measured(input.upstream, c.direct);
        entry.direct.push(direct);
        let message = `[${repeat}/${options.repeats}] ${c.name} c=${concurrency}: direct ${line(direct)}`;
        if (floor && FLOOR_CASE_NAMES.includes(c.name)) {
          // The floor relays the direct request (same path and body) through one fetch hop.
          const relayed = await measured(floor, c.direct);
          entry.floor.push(relayed);
          message += ` | floor ${line(relayed)}`;
        }
        // The bare JS relay is a reference for c=64 figures only (and the long stream's own concurrency).
        if (jsRelay && JS_RELAY_CASE_NAMES.includes(c.name) && (c.concurrency || concurrency === maxConcurrency)) {
          const relayed = await measured(jsRelay, c.direct);
          entry.jsRelay.push(relayed);
          message += ` | JS relay ${line(relayed)}`;
        }
        if (viaGateway) {
          const gateway = await measured(input.gateway, c.gateway);
          entry.gateway.push(gateway);
          const { rssBytes } = await readMemory(input.gateway.process.pid);
          rssTimeline.push({ after: `${key}|${repeat}`, rssBytes });
          message += ` | gateway ${line(gateway)}`;
        }
        console.log(message);
      }
    }
  }
  const comparisons: Comparison[] = [];
  for (const c of cases) {
    for (const concurrency of concurrencies(c)) {
      const entry = runs.get(`${c.name}|${concurrency}`)!;
      const problem = unavailable.get(c.name);
      comparisons.push(
        compare(
          c.name,
          concurrency,
          side(entry.direct),
          problem ? { unavailable: problem } : side(entry.gateway),
          entry.floor.length > 0 ? side(entry.floor) : undefined,
          entry.jsRelay.length > 0 ? side(entry.jsRelay) : undefined,
        ),
      );
    }
  }
  const ttfb: Ttfb[] = [];
  // Time to first byte does not depend on how long the stream goes on.
  for (const c of cases.filter((c) => c.stream && !c.events)) {
    const direct = await sampleTtfb(input.upstream.url, c.direct, input.token, options.ttfbSamples);
    const floorTimes = floor && FLOOR_CASE_NAMES.includes(c.name)
      ? await sampleTtfb(floor.url, c.direct, input.token, options.ttfbSamples)
      : undefined;
    const problem = unavailable.get(c.name);
    const gateway = problem
      ? undefined
      : await sampleTtfb(input.gateway.url, c.gateway, tokenFor(c.gateway, input), options.ttfbSamples);
    ttfb.push({
      case: c.name,
      directP50Ms: percentile(direct, 50),
      directP99Ms: percentile(direct, 99),
      gatewayP50Ms: gateway && percentile(gateway, 50),
      gatewayP99Ms: gateway && percentile(gateway, 99),
      floorP50Ms: floorTimes && percentile(floorTimes, 50),
      unavailable: problem,
    });
  }
  const { peakRssBytes } = await readMemory(input.gateway.process.pid);
  const floorPeakRssBytes = floor && (await readMemory(floor.process.pid)).peakRssBytes;
  const memory: Memory = {
    peakRssBytes,
    floorPeakRssBytes,
    startRssBytes,
    idleRssBytes,
    floorIdleRssBytes,
    rssAfter,
  };
  const openStreams = await openStreamsPhase(input);
  const bodies = await input.bodies?.() ?? [];
  const targets = evaluateTargets({ comparisons, ttfb, memory, openStreams, bodies });
  const upstreamAlone = comparisons
    .filter((c) => c.concurrency === maxConcurrency)
    .map((c) => `${c.case} ${Math.round(c.direct.rps.mean)} rps`)
    .join(", ");
  const text = [
    renderReport({ comparisons, ttfb, memory, targets, openStreams }),
    "",
    `Fake upstream alone (direct, sharing core 0 with wrk) at c=${maxConcurrency}: ${upstreamAlone}`,
    ...[...unavailable].map(([name, why]) => `Unavailable through the gateway: ${name} (${why})`),
  ].join("\n");
  return {
    text,
    json: {
      comparisons,
      ttfb,
      memory,
      openStreams,
      bodies,
      rssTimeline,
      targets,
      unavailable: Object.fromEntries(unavailable),
      runs: Object.fromEntries(runs),
    },
  };
}

/**
 * The many-open-streams case, on a fresh gateway and a fresh floor proxy (so earlier load has not already grown
 * their heaps), each warmed up with a second of streamed load first.
 */
async function openStreamsPhase(input: MeasureInput): Promise<OpenStreamsSide[]> {
  const { options } = input;
  const stream = input.cases.find((c) => c.name === "messages_stream");
  if (options.openStreams === 0 || !input.restart || !stream) return [];
  const { gateway, floor } = await input.restart();
  const sides = [...floor ? [{ name: "floor" as const, service: floor }] : [], {
    name: "gateway" as const,
    service: gateway,
  }];
  return await measureOpenStreams(sides, {
    streams: options.openStreams,
    request: (service) => ({
      url: service.url + PACED_TARGET.path,
      body: PACED_TARGET.body,
      headers: requestHeaders(input.token),
    }),
    warm: async (side) => {
      await runLoad(input, load(input, side.service, side.name === "floor" ? stream.direct : stream.gateway), 16, 1);
    },
  });
}

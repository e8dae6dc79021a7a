/**
 * @module The many-open-streams case: a wave of concurrent streams that the fake upstream paces the way a model
 * streams (one event every 50-100 ms for several seconds), sent from this runner to one serving process at a
 * time; its RSS is sampled while they are open and its CPU read around the wave, to give the memory each open
 * stream holds and the CPU each relayed event costs.
 */
import { PACED_EVENTS } from "./fake_upstream.ts";
import { readCpuMs, readMemory } from "./processes.ts";
import type { Service } from "./setup.ts";

/** One wave against one serving process. */
export interface OpenStreamsResult {
  streams: number;
  /** Streams that ended with every event and a 200. */
  completed: number;
  /** Events the client received, all streams together. */
  events: number;
  /** RSS before the wave, and the highest sample while it ran. */
  rssBeforeBytes: number;
  rssPeakBytes: number;
  rssPerStreamBytes: number;
  cpuUsPerEvent: number;
  seconds: number;
}

/** What a wave sends: where, the body, the headers. */
export interface WaveRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

const LF = 10;

/** Events completed in a chunk (each ends with a blank line; the fake upstream ends lines with LF only). */
export function countEvents(chunk: Uint8Array, endedWithLf: boolean): number {
  let events = 0;
  for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) {
    if (i === 0 ? endedWithLf : chunk[i - 1] === LF) events++;
  }
  return events;
}

/** Reads one stream to its end (or until `deadline` aborts it); the events it got, or -1 for a failed answer. */
async function oneStream(request: WaveRequest, signal: AbortSignal): Promise<number> {
  try {
    const res = await fetch(request.url, { method: "POST", headers: request.headers, body: request.body, signal });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return -1;
    }
    let events = 0;
    let endedWithLf = false;
    for await (const chunk of res.body) {
      events += countEvents(chunk, endedWithLf);
      if (chunk.length > 0) endedWithLf = chunk[chunk.length - 1] === LF;
    }
    return events;
  } catch {
    return -1;
  }
}

/** Sends `streams` paced streams at once (spread over `rampMs`), sampling the server's RSS every 100 ms. */
export async function openStreamsWave(
  request: WaveRequest,
  options: { pid: number; streams: number; rampMs: number; timeoutMs: number },
): Promise<OpenStreamsResult> {
  const { pid, streams } = options;
  const rssBeforeBytes = (await readMemory(pid)).rssBytes;
  const cpuBefore = await readCpuMs(pid);
  const started = performance.now();
  const deadline = AbortSignal.timeout(options.timeoutMs);
  let rssPeakBytes = rssBeforeBytes;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      rssPeakBytes = Math.max(rssPeakBytes, (await readMemory(pid)).rssBytes);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const results: Promise<number>[] = [];
  for (let i = 0; i < streams; i++) {
    results.push(oneStream(request, deadline));
    // Spread the opening so the wave is a thousand streams open together, not a thousand connects at once.
    if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, options.rampMs / (streams / 50)));
  }
  const counts = await Promise.all(results);
  sampling = false;
  await sampler;
  const cpuAfter = await readCpuMs(pid);
  const events = counts.reduce((sum, n) => sum + Math.max(0, n), 0);
  return {
    streams,
    completed: counts.filter((n) => n === PACED_EVENTS).length,
    events,
    rssBeforeBytes,
    rssPeakBytes,
    rssPerStreamBytes: (rssPeakBytes - rssBeforeBytes) / streams,
    cpuUsPerEvent: events > 0 ? ((cpuAfter - cpuBefore) * 1000) / events : NaN,
    seconds: (performance.now() - started) / 1000,
  };
}

/** One side's wave, named. */
export interface OpenStreamsSide extends OpenStreamsResult {
  side: "floor" | "gateway";
}

/** How long a wave may take before its streams are given up. */
const WAVE_TIMEOUT_MS = 60_000;

/** A second for the warmed-up process to settle (its last requests to end) before RSS is read. */
const SETTLE_MS = 1000;

/** Runs one wave of `streams` paced streams against each side in turn, each warmed up by `warm` first. */
export async function measureOpenStreams(
  sides: { name: "floor" | "gateway"; service: Service }[],
  options: {
    streams: number;
    request(service: Service): WaveRequest;
    warm(side: { name: "floor" | "gateway"; service: Service }): Promise<void>;
  },
): Promise<OpenStreamsSide[]> {
  const out: OpenStreamsSide[] = [];
  for (const side of sides) {
    await options.warm(side);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const result = await openStreamsWave(options.request(side.service), {
      pid: side.service.process.pid,
      streams: options.streams,
      rampMs: 1000,
      timeoutMs: WAVE_TIMEOUT_MS,
    });
    out.push({ side: side.name, ...result });
    console.log(
      `open streams, ${side.name}: ${result.completed}/${result.streams} complete, ` +
        `${(result.rssPerStreamBytes / 1024).toFixed(1)} KiB RSS per open stream, ` +
        `${result.cpuUsPerEvent.toFixed(1)} us CPU per event, ${result.seconds.toFixed(1)} s`,
    );
  }
  return out;
}

/**
 * @module `deno task bench:flood`: one Responses WebSocket that floods the gateway with tiny malformed messages (each
 * one earns an error event), from a client that never reads and from one that reads everything, each against a fresh
 * gateway process. Other clients' `GET /healthz` latency is sampled all along, and the gateway's RSS before, at its
 * peak, when the client leaves and until it is back (or the settle time is over). Loopback only, bounded in messages
 * and in time. tests/process/socket_flood_test.ts runs the same flood with its bounds as assertions.
 */
import { benchArgs, parseCountFlags, runMemoryBench } from "./memory_run.ts";
import { readMemory } from "./processes.ts";
import { clientFrame, closeOf, OPCODE, openRawSocket, type RawSocket } from "./raw_socket.ts";
import { median } from "./report.ts";
import { startGateway } from "./setup.ts";

const MB = 1024 * 1024;

/** How one run is shaped. */
export interface FloodOptions {
  /** Messages the client that does not read sends, and the one that reads. */
  messages: number;
  readMessages: number;
  /** How long the RSS is followed after the client leaves. */
  settleS: number;
}

const USAGE = `Usage: deno task bench:flood [--messages N] [--read-messages N] [--settle S]

  --messages N        two-byte messages the client that does not read sends (default 300000)
  --read-messages N   two-byte messages the client that reads sends (default 100000)
  --settle S          seconds the RSS is followed after the client leaves (default 20)
  --root DIR          run the gateway of another checkout (such as an earlier commit's), for a before and after`;

/** Parses the flags; undefined for --help. */
function parseFloodArgs(args: readonly string[]): (FloodOptions & { root?: string }) | undefined {
  const at = args.indexOf("--root");
  const root = at === -1 ? undefined : args[at + 1];
  if (at !== -1 && !root) throw new RangeError(`--root needs a directory\n\n${USAGE}`);
  const counts = parseCountFlags<FloodOptions & Record<string, number>>(
    at === -1 ? args : [...args.slice(0, at), ...args.slice(at + 2)],
    {
      flags: { "--messages": "messages", "--read-messages": "readMessages", "--settle": "settleS" },
      defaults: { messages: 300_000, readMessages: 100_000, settleS: 20 },
      usage: USAGE,
    },
  );
  return counts && { ...counts, root: root && (root.endsWith("/") ? root : `${root}/`) };
}

/** What one flood did to the gateway. */
export interface FloodResult {
  reading: boolean;
  /** Messages the client got out before the gateway stopped taking them (or all of them). */
  sent: number;
  /** Whether the gateway closed the socket (a write failed) before the client left. */
  closedByGateway: boolean;
  /** Bytes the reading client received. */
  received: number;
  /** `/healthz` latency of other clients while the socket was open, in ms. */
  healthP50Ms: number;
  healthMaxMs: number;
  /** Health probes answered, and those that failed or took longer than their deadline. */
  healthProbes: number;
  healthFailures: number;
  rssBeforeBytes: number;
  rssPeakBytes: number;
  rssAtLeaveBytes: number;
  rssAfterBytes: number;
  /** Seconds after the client left until the RSS was within 64 MB of its level before (undefined: not in time). */
  backWithinS?: number;
  /** The close code the reading client got from the gateway, if it got one. */
  closeCode?: number;
  /** Whether the reading client saw the gateway end the connection before it left. */
  endedByGateway: boolean;
}

const FRAMES_PER_WRITE = 5000;

/** RSS this close to its level before the flood counts as given back. */
const BACK_MARGIN = 64 * MB;

/**
 * Sends `messages` two-byte text messages on one socket, `FRAMES_PER_WRITE` to a write, as fast as the connection
 * takes them, until all are sent, the gateway closes, or writes stall for `stallMs`; returns how many went out.
 */
async function flood(socket: RawSocket, messages: number, stallMs: number): Promise<{ sent: number; closed: boolean }> {
  const one = clientFrame("{}");
  const batch = new Uint8Array(one.length * FRAMES_PER_WRITE);
  for (let i = 0; i < FRAMES_PER_WRITE; i++) batch.set(one, i * one.length);
  let sent = 0;
  while (sent < messages) {
    const count = Math.min(FRAMES_PER_WRITE, messages - sent);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<"stalled">((resolve) => timer = setTimeout(() => resolve("stalled"), stallMs));
    try {
      const outcome = await Promise.race([socket.write(batch.subarray(0, count * one.length)), stalled]);
      if (outcome === "stalled") return { sent, closed: false };
    } catch {
      return { sent, closed: true };
    } finally {
      clearTimeout(timer);
    }
    sent += count;
  }
  return { sent, closed: false };
}

/** Probes `GET /healthz` every 100 ms until stopped; the latencies and the failures. */
function healthProbe(url: string): { stop(): Promise<{ latencies: number[]; failures: number }> } {
  const latencies: number[] = [];
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(30_000) });
        await res.body?.cancel();
        if (res.status !== 200) failures++;
        latencies.push(performance.now() - started);
      } catch {
        failures++;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { latencies, failures };
    },
  };
}

/**
 * One flood against the gateway at `url` (process `pid`) with `token`: the client sends, then (reading) takes what
 * comes until a second passes with nothing more, or (not reading) waits two seconds; then it leaves and the RSS is
 * followed for `settleS` seconds.
 */
export async function floodOnce(
  target: { url: string; pid: number; token: string },
  options: { messages: number; settleS: number; reading: boolean },
): Promise<FloodResult> {
  const { url, pid } = target;
  for (let i = 0; i < 5; i++) await (await fetch(`${url}/healthz`)).body?.cancel();
  const rssBeforeBytes = (await readMemory(pid)).rssBytes;
  const health = healthProbe(url);
  const socket = await openRawSocket(url, { "x-api-key": target.token });
  let received = 0;
  let lastRead = performance.now();
  let closeCode: number | undefined;
  let leaving = false;
  let endedByGateway = false;
  const reader = options.reading
    ? (async () => {
      for (;;) {
        const frame = await socket.next();
        if (!frame) return void (endedByGateway = !leaving);
        received += frame.payload.length;
        lastRead = performance.now();
        if (frame.opcode === OPCODE.close) closeCode = closeOf(frame).code;
      }
    })()
    : Promise.resolve();
  const { sent, closed } = await flood(socket, options.messages, 10_000);
  if (options.reading) {
    const deadline = performance.now() + 120_000;
    while (performance.now() - lastRead < 1000 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } else {
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
  const { latencies, failures } = await health.stop();
  const rssAtLeaveBytes = (await readMemory(pid)).rssBytes;
  leaving = true;
  socket.close();
  await reader;
  const left = performance.now();
  let backWithinS: number | undefined;
  let rssAfterBytes = rssAtLeaveBytes;
  while (backWithinS === undefined && performance.now() - left < options.settleS * 1000) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    rssAfterBytes = (await readMemory(pid)).rssBytes;
    if (rssAfterBytes <= rssBeforeBytes + BACK_MARGIN) backWithinS = (performance.now() - left) / 1000;
  }
  return {
    reading: options.reading,
    sent,
    closedByGateway: closed,
    received,
    healthP50Ms: median(latencies),
    healthMaxMs: latencies.length ? Math.max(...latencies) : NaN,
    healthProbes: latencies.length,
    healthFailures: failures,
    rssBeforeBytes,
    rssPeakBytes: (await readMemory(pid)).peakRssBytes,
    rssAtLeaveBytes,
    rssAfterBytes,
    backWithinS,
    closeCode,
    endedByGateway,
  };
}

/** One line of figures for a result. */
export function floodLine(r: FloodResult): string {
  const mb = (bytes: number) => bytes < 10 * MB ? `${(bytes / 1024).toFixed(0)} KB` : `${(bytes / MB).toFixed(0)} MB`;
  return `${r.reading ? "reading    " : "not reading"} sent ${r.sent}${
    r.closedByGateway ? " (closed by the gateway)" : ""
  }` +
    `${
      r.reading
        ? `, read ${mb(r.received)}, ${
          r.endedByGateway ? `ended by the gateway (close frame ${r.closeCode ?? "none"})` : "open until it left"
        }`
        : ""
    }; /healthz p50 ${r.healthP50Ms.toFixed(0)} ms, max ${
      r.healthMaxMs.toFixed(0)
    } ms (${r.healthProbes} probes), ${r.healthFailures} failed; RSS before ${mb(r.rssBeforeBytes)}, peak ${
      mb(r.rssPeakBytes)
    }, at leave ${mb(r.rssAtLeaveBytes)}, ${
      r.backWithinS === undefined
        ? `still ${mb(r.rssAfterBytes)} after the settle time`
        : `back within ${r.backWithinS.toFixed(1)} s`
    }`;
}

async function main(): Promise<number> {
  const options = benchArgs(parseFloodArgs, USAGE);
  if (typeof options === "number") return options;
  return await runMemoryBench("modelgate-bench-flood-", async ({ processes, dir, config, token }) => {
    for (const reading of [false, true]) {
      const gateway = await startGateway(processes, { dir, config, root: options.root });
      const messages = reading ? options.readMessages : options.messages;
      const result = await floodOnce({ url: gateway.url, pid: gateway.process.pid, token }, {
        messages,
        settleS: options.settleS,
        reading,
      });
      console.log(floodLine(result));
      await processes.stop(gateway.process);
    }
    return 0;
  });
}

if (import.meta.main) {
  Deno.exitCode = await main();
}

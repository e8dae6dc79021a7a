/**
 * @module The bench's workers section: requests/s and CPU per request of the gateway run as `serve --workers 1` and
 * `--workers 2` on every core, beside the floor proxy in as many workers, with its own fake upstream, tokens and KV;
 * also runnable alone as `deno task bench:workers [--quick] [--duration S] [--repeats N]`.
 */
import { parseBenchArgs } from "./options.ts";
import { canPin, type ProcessSet, processSet, readMemory } from "./processes.ts";
import { fixed, formatColumns, type Side, side } from "./report.ts";
import {
  CASES,
  prepareGateway,
  requestHeaders,
  ROOT,
  type Service,
  startGateway,
  startUpstream,
  startV8Flags,
} from "./setup.ts";
import { runWrk, type WrkResult, wrkScript } from "./wrk.ts";

/** The worker counts measured, and the connections of every run (enough to keep two workers busy). */
const COUNTS = [1, 2];
const CONNECTIONS = 64;
/** The cases measured: one non-streamed and one streamed passthrough request. */
const CASE_NAMES = ["messages", "messages_stream"];
const MB = 1024 * 1024;

/** How the section runs. */
export interface WorkersOptions {
  duration: number;
  warmup: number;
  repeats: number;
}

/** One worker count on one case, of the gateway or of the floor proxy in as many workers. */
export interface WorkersRow {
  server: "floor" | "gateway";
  workers: number;
  case: string;
  side: Side;
  /** The process's peak RSS once its runs are over (all workers: they are threads of one process). */
  peakRssBytes: number;
}

/** Seconds the section takes at most, for the bench's time budget. */
export function workersSeconds(options: WorkersOptions): number {
  const perServer = CASE_NAMES.length * (options.warmup + options.repeats * (options.duration + 0.3)) + 10;
  return 2 * COUNTS.length * perServer + 10;
}

/**
 * Every process of the section on every core: the bench pins the upstream and wrk to core 0 and the gateway to core 1,
 * which would put both workers on one core. Children inherit the runner's own pinning, so they are started through
 * taskset with all cores whenever it is in use.
 */
function onAllCores(processes: ProcessSet, pinned: boolean): ProcessSet {
  const cores = `0-${navigator.hardwareConcurrency - 1}`;
  return {
    ...processes,
    start: (name, command, args, options = {}) =>
      pinned
        ? processes.start(name, "taskset", ["-c", cores, command, ...args], { env: options.env })
        : processes.start(name, command, args, { env: options.env }),
  };
}

/** Starts the floor proxy in `workers` workers on one port (floor_workers.ts) and waits for its port. */
async function startFloorWorkers(processes: ProcessSet, upstreamUrl: string, workers: number): Promise<Service> {
  const process = processes.start("floor proxy", Deno.execPath(), [
    "run",
    ...await startV8Flags(),
    "--allow-net=127.0.0.1",
    "--allow-read",
    "--unstable-net",
    `${ROOT}bench/floor_workers.ts`,
    upstreamUrl,
    String(workers),
  ]);
  const [, port] = await process.waitFor(/"listening":(\d+)/, 30_000);
  return { process, url: `http://127.0.0.1:${port}` };
}

/** One wrk run at {@linkcode CONNECTIONS} against `url`, with the gateway's CPU per request. */
async function loadRun(
  processes: ProcessSet,
  dir: string,
  request: { url: string; body: string; token: string },
  seconds: number,
  gatewayPid: number,
): Promise<WrkResult> {
  const script = `${dir}/workers-${crypto.randomUUID()}.lua`;
  await Deno.writeTextFile(script, wrkScript({ ...request, headers: requestHeaders(request.token) }));
  const { result, cpuMs: [cpuMs] } = await runWrk(
    processes,
    { connections: CONNECTIONS, seconds, script, url: request.url },
    [gatewayPid],
  );
  if (result.requests > 0) result.serverCpuUsPerRequest = (cpuMs * 1000) / result.requests;
  return result;
}

/**
 * Measures every worker count on every case. A gateway per count runs at once (each on its own KV), and their runs
 * take turns, so work elsewhere on the machine weighs on every count alike rather than on whichever ran at the time.
 */
export async function measureWorkers(
  input: { processes: ProcessSet; pinned: boolean; dir: string; options: WorkersOptions },
): Promise<WorkersRow[]> {
  const processes = onAllCores(input.processes, input.pinned);
  const upstream = await startUpstream(processes);
  const servers: { server: WorkersRow["server"]; workers: number; dir: string; token: string; service: Service }[] = [];
  try {
    for (const workers of COUNTS) {
      const dir = `${input.dir}/workers-${workers}`;
      await Deno.mkdir(dir, { recursive: true });
      const { config, token } = await prepareGateway(dir, Number(new URL(upstream.url).port));
      const floor = await startFloorWorkers(processes, upstream.url, workers);
      servers.push({ server: "floor", workers, dir, token, service: floor });
      const service = await startGateway(processes, { dir, config, env: { MODELGATE_WORKERS: `${workers}` } });
      servers.push({ server: "gateway", workers, dir, token, service });
    }
    const rows: WorkersRow[] = [];
    for (const c of CASES.filter((c) => CASE_NAMES.includes(c.name))) {
      const runs = servers.map(() => [] as WrkResult[]);
      for (let i = -1; i < input.options.repeats; i++) {
        // Round -1 is the warm-up of every gateway, not measured.
        if (i < 0 && input.options.warmup === 0) continue;
        for (const [at, { dir, token, service }] of servers.entries()) {
          const request = { url: service.url + c.gateway.path, body: c.gateway.body, token };
          const seconds = i < 0 ? input.options.warmup : input.options.duration;
          const result = await loadRun(processes, dir, request, seconds, service.process.pid);
          if (i >= 0) runs[at].push(result);
        }
      }
      for (const [at, { server, workers, service }] of servers.entries()) {
        const { peakRssBytes } = await readMemory(service.process.pid);
        rows.push({ server, workers, case: c.name, side: side(runs[at]), peakRssBytes });
      }
    }
    return rows;
  } finally {
    for (const { service } of servers) await processes.stop(service.process);
    await processes.stop(upstream.process);
  }
}

/**
 * The printed section: one row per case, server and worker count, and what more workers gain over 1; the floor's gain
 * is what this machine gives any relay from more workers.
 */
export function workersTable(rows: readonly WorkersRow[]): string[] {
  if (rows.length === 0) return [];
  const one = (row: WorkersRow) => rows.find((r) => r.case === row.case && r.server === row.server && r.workers === 1);
  return [
    `Workers: serve --workers N at c=${CONNECTIONS}, every process on all ${navigator.hardwareConcurrency} cores ` +
    "(wrk and the fake upstream share them with the gateway, so on a machine with few cores they take CPU the " +
    "workers could use); CPU is the whole process, all workers; floor: the floor proxy in as many workers",
    formatColumns([
      ["case", "server", "workers", "req/s", "vs 1 worker", "ms CPU/req", "p50 ms", "p99 ms", "peak RSS", "errors"],
      ...rows.map((r) => [
        r.case,
        r.server,
        String(r.workers),
        fixed(r.side.rps.mean, 0),
        fixed(r.side.rps.mean / (one(r)?.side.rps.mean ?? NaN), 2, "x"),
        fixed(r.side.cpuUsPerRequest.mean / 1000, 3),
        fixed(r.side.p50Ms.mean, 1),
        fixed(r.side.p99Ms.mean, 1),
        fixed(r.peakRssBytes / MB, 0, " MB"),
        String(r.side.errors),
      ]),
    ]),
    "",
  ];
}

/** `deno task bench:workers`: the section alone, with the bench's --quick, --duration, --repeats and --no-pin. */
async function main(): Promise<number> {
  const options = parseBenchArgs(Deno.args);
  if (!options) return console.log("Usage: deno task bench:workers [--quick] [--duration S] [--repeats N]"), 0;
  const pinned = options.pin && await canPin();
  const processes = processSet(pinned);
  const dir = await Deno.makeTempDir({ prefix: "modelgate-bench-workers-" });
  const load = Deno.loadavg();
  try {
    const rows = await measureWorkers({ processes, pinned, dir, options });
    console.log(workersTable(rows).join("\n"));
    console.log(`Load average before ${load.join(" ")}, after ${Deno.loadavg().join(" ")}`);
    return 0;
  } finally {
    await processes.stopAll();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exitCode = await main();

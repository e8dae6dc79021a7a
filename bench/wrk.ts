/**
 * @module The load generator: wrk driven by a generated Lua script that POSTs a fixed body and prints its
 * summary as one JSON line, the parser for that line, and one run of it with the CPU of the processes it loads.
 */
import { type ProcessSet, readCpuMs } from "./processes.ts";

/** One wrk run's numbers; latencies in microseconds. */
export interface WrkResult {
  requests: number;
  durationUs: number;
  /** Requests per second over the run. */
  rps: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** CPU the serving process used per request, all its threads, when measured. */
  serverCpuUsPerRequest?: number;
}

/** What one load run sends. */
export interface LoadRequest {
  url: string;
  headers: Record<string, string>;
  /** The JSON body of every request. */
  body: string;
  /** A second body sent on every other request (the soak mixes streamed and non-streamed requests). */
  altBody?: string;
  /**
   * A text that stands once in `body` and that each request replaces with a number of its own, counting from 1 (an
   * MCP session's calls may not share an id); not with `altBody`.
   */
  idMark?: string;
}

const RESULT_MARK = "BENCH_RESULT ";

/** A Lua long string that cannot be closed by anything inside `text`. */
function luaString(text: string): string {
  let level = "";
  while (text.includes(`]${level}]`)) level += "=";
  return `[${level}[${text}]${level}]`;
}

/**
 * The Lua script for one run: request set-up (optionally alternating two bodies, or numbering each request's body)
 * and a JSON summary at the end. The URL is wrk's argument, not the script's.
 */
export function wrkScript(load: Omit<LoadRequest, "url"> & { url?: string }): string {
  const lines = [`wrk.method = "POST"`, ...load.idMark === undefined ? [`wrk.body = ${luaString(load.body)}`] : []];
  for (const [name, value] of Object.entries(load.headers)) {
    lines.push(`wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`);
  }
  if (load.idMark !== undefined) {
    const at = load.body.indexOf(load.idMark);
    if (at === -1) throw new Error(`The body has no ${load.idMark} to number: ${load.body}`);
    const [head, tail] = [load.body.slice(0, at), load.body.slice(at + load.idMark.length)];
    lines.push(
      `local n = 0`,
      `request = function() n = n + 1; return wrk.format(nil, nil, nil, ${luaString(head)} .. n .. ${
        luaString(tail)
      }) end`,
    );
  } else if (load.altBody !== undefined) {
    lines.push(
      `local bodies = {}`,
      `local sent = 0`,
      `init = function() bodies[0] = wrk.format(nil, nil, nil, wrk.body)`,
      `  bodies[1] = wrk.format(nil, nil, nil, ${luaString(load.altBody)}) end`,
      `request = function() sent = sent + 1; return bodies[sent % 2] end`,
    );
  }
  return [...lines, ...WRK_SUMMARY].join("\n") + "\n";
}

/** The Lua `done` that prints wrk's summary as the one JSON line {@linkcode parseWrkOutput} reads. */
const WRK_SUMMARY = [
  `done = function(summary, latency, requests)`,
  `  local e = summary.errors`,
  `  io.write(string.format('${RESULT_MARK}{"requests":%d,"duration_us":%d,' ..`,
  `    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..`,
  `    '"latency_us":{"p50":%.1f,"p90":%.1f,"p99":%.1f,"max":%.1f,"mean":%.2f}}\\n',`,
  `    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,`,
  `    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))`,
  `end`,
];

/** Reads the summary line the script prints; throws when wrk printed none (it failed to start or to connect). */
export function parseWrkOutput(stdout: string): WrkResult {
  const line = stdout.split("\n").find((l) => l.startsWith(RESULT_MARK));
  if (!line) throw new Error(`Cannot read wrk's result: no summary line in its output ${JSON.stringify(stdout)}`);
  const raw = JSON.parse(line.slice(RESULT_MARK.length));
  const durationUs = raw.duration_us;
  return {
    requests: raw.requests,
    durationUs,
    rps: durationUs > 0 ? raw.requests / (durationUs / 1e6) : 0,
    errors: raw.errors,
    latencyUs: raw.latency_us,
  };
}

/** Command-line arguments for wrk: one thread (it shares a core with the upstream), fixed connections. */
export function wrkArgs(options: { connections: number; seconds: number; script: string; url: string }): string[] {
  return [
    "-t1",
    `-c${options.connections}`,
    `-d${Math.max(1, Math.round(options.seconds))}s`,
    "--timeout",
    "10s",
    "-s",
    options.script,
    options.url,
  ];
}

/**
 * One wrk run of `script` against `url`, on core 0 beside the upstream, with the CPU each process of `pids` used
 * over it (milliseconds, in the same order); throws when wrk fails.
 */
export async function runWrk(
  processes: ProcessSet,
  run: { connections: number; seconds: number; script: string; url: string },
  pids: readonly number[] = [],
): Promise<{ result: WrkResult; cpuMs: number[] }> {
  const cpu = () => Promise.all(pids.map((pid) => readCpuMs(pid)));
  const before = await cpu();
  const wrk = processes.start("wrk", "wrk", wrkArgs(run), { core: 0 });
  const status = await wrk.finished;
  const after = await cpu();
  if (!status.success) throw new Error(`wrk failed (exit ${status.code}):\n${wrk.tail()}`);
  return { result: parseWrkOutput(wrk.tail()), cpuMs: after.map((ms, i) => ms - before[i]) };
}

/**
 * @module `deno task bench:tracing`: what tracing costs. Gateway processes on one KV, one with OTEL_DENO unset and one
 * with it on (exporting to a sink in this runner), and optionally a checkout's code with tracing off (--baseline),
 * serve the same cases in alternating wrk runs in the same minutes; the verdicts are CPU per request, on against off
 * (at most 1.15x) and off against the baseline (within the runs' own spread).
 */
import { canPin, pinSelf, processSet } from "./processes.ts";
import { formatColumns, type Stat, stat } from "./report.ts";
import {
  CASES,
  prepareGateway,
  probe,
  requestHeaders,
  ROOT,
  type Service,
  startFloor,
  startGateway,
  startUpstream,
} from "./setup.ts";
import { runWrk, wrkScript } from "./wrk.ts";

const USAGE =
  `Usage: deno task bench:tracing [--seconds N] [--repeats N] [--concurrency N] [--cases a,b] [--baseline GITDIR]
  --seconds N       seconds per measured run (default 5)
  --repeats N       alternating rounds of every side (default 4)
  --concurrency N   connections of wrk (default 16)
  --cases LIST      of messages, messages_stream, translated, translated_stream (default all four)
  --baseline DIR    also measure the HEAD of the git repository DIR (such as the main branch's checkout), tracing off`;

interface Options {
  seconds: number;
  repeats: number;
  concurrency: number;
  cases: string[];
  baseline?: string;
}

function parseArgs(args: readonly string[]): Options | undefined {
  const options: Options = {
    seconds: 5,
    repeats: 4,
    concurrency: 16,
    cases: ["messages", "messages_stream", "translated", "translated_stream"],
  };
  for (let i = 0; i < args.length; i += 2) {
    const value = args[i + 1];
    if (value === undefined) return undefined;
    if (args[i] === "--seconds") options.seconds = Number(value);
    else if (args[i] === "--repeats") options.repeats = Number(value);
    else if (args[i] === "--concurrency") options.concurrency = Number(value);
    else if (args[i] === "--cases") options.cases = value.split(",");
    else if (args[i] === "--baseline") options.baseline = value;
    else return undefined;
  }
  const whole = (n: number) => Number.isInteger(n) && n > 0;
  if (![options.seconds, options.repeats, options.concurrency].every(whole)) return undefined;
  return options.cases.every((name) => CASES.some((c) => c.name === name && !c.events)) ? options : undefined;
}

/** An OTLP/HTTP endpoint that takes every export and answers with an empty success; it counts what it took. */
function otlpSink(): { url: string; exports: () => number; close(): Promise<void> } {
  let exports = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.arrayBuffer();
    exports++;
    const json = (req.headers.get("content-type") ?? "").includes("json");
    return new Response(json ? "{}" : new Uint8Array(0), {
      headers: { "content-type": json ? "application/json" : "application/x-protobuf" },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, exports: () => exports, close: () => server.shutdown() };
}

/** The tree of `ref` in the git repository `repo`, exported into `into`; returns the directory with a trailing slash. */
async function exportTree(repo: string, into: string): Promise<string> {
  await Deno.mkdir(into, { recursive: true });
  const archive = await new Deno.Command("git", {
    args: ["-C", repo, "archive", "--format=tar", "HEAD"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!archive.success) throw new Error(`git archive failed: ${new TextDecoder().decode(archive.stderr)}`);
  const tar = new Deno.Command("tar", { args: ["-x", "-C", into], stdin: "piped" }).spawn();
  const writer = tar.stdin.getWriter();
  await writer.write(archive.stdout);
  await writer.close();
  if (!(await tar.status).success) throw new Error("tar could not unpack the baseline");
  return `${into.replace(/\/$/, "")}/`;
}

async function main(): Promise<number> {
  const options = parseArgs(Deno.args);
  if (!options) return console.error(USAGE), 2;
  const pinned = await canPin() && await pinSelf(0);
  const processes = processSet(pinned);
  const dir = await Deno.makeTempDir({ prefix: "modelgate-bench-tracing-" });
  const sink = otlpSink();
  const stop = () => void processes.stopAll().then(() => Deno.exit(130));
  Deno.addSignalListener("SIGINT", stop);
  try {
    const upstream = await startUpstream(processes);
    const { config, token } = await prepareGateway(dir, Number(new URL(upstream.url).port));
    // A floor side is sent what the upstream takes (the direct request), the gateways what a client sends.
    const sides: { name: string; service: Service; direct?: boolean }[] = [
      { name: "off", service: await startGateway(processes, { dir, config }) },
      {
        name: "on",
        service: await startGateway(processes, {
          dir,
          config,
          env: { OTEL_DENO: "true", OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: "modelgate-bench" },
        }),
      },
    ];
    // What an operator who samples one trace in ten pays (the runtime's sampler, with the usual parent-based rule).
    sides.push({
      name: "sampled",
      service: await startGateway(processes, {
        dir,
        config,
        env: {
          OTEL_DENO: "true",
          OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
          OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
          OTEL_TRACES_SAMPLER_ARG: "0.1",
        },
      }),
    });
    // The runtime's own share: the floor proxy (a bare fetch relay) with Deno's server and fetch spans off and on.
    const exporting = { OTEL_DENO: "true", OTEL_EXPORTER_OTLP_ENDPOINT: sink.url };
    sides.push({ name: "floor off", service: await startFloor(processes, upstream.url), direct: true });
    sides.push({ name: "floor on", service: await startFloor(processes, upstream.url, exporting), direct: true });
    if (options.baseline) {
      const root = await exportTree(options.baseline, `${dir}/baseline`);
      sides.push({ name: "baseline", service: await startGateway(processes, { dir, config, root }) });
    }
    console.log(
      `bench:tracing from ${ROOT}: ${options.repeats} rounds of ${options.seconds} s at c=${options.concurrency}, ` +
        `pinning ${pinned ? "on" : "off"}, ${new Date().toISOString()}`,
    );
    const cases = CASES.filter((c) => options.cases.includes(c.name));
    const cpu = new Map<string, number[]>();
    const rps = new Map<string, number[]>();
    for (const c of cases) {
      for (const { name, service, direct } of sides) {
        const problem = await probe(service.url, direct ? c.direct : c.gateway, c.stream, token);
        if (problem) throw new Error(`Side ${name} fails case ${c.name}: ${problem}`);
      }
    }
    for (let round = -1; round < options.repeats; round++) {
      for (const c of cases) {
        for (const { name, service, direct } of sides) {
          // Round -1 warms every side up and is not counted.
          const seconds = round < 0 ? 1 : options.seconds;
          const script = `${dir}/${c.name}.lua`;
          const target = direct ? c.direct : c.gateway;
          await Deno.writeTextFile(
            script,
            wrkScript({ url: service.url + target.path, headers: requestHeaders(token), body: target.body }),
          );
          const { result, cpuMs: [cpuMs] } = await runWrk(
            processes,
            { connections: options.concurrency, seconds, script, url: service.url + target.path },
            [service.process.pid],
          );
          const errors = Object.values(result.errors).reduce((a, b) => a + b, 0);
          if (errors > 0) throw new Error(`Side ${name}, case ${c.name}: ${errors} errors`);
          if (round < 0) continue;
          const key = `${c.name}/${name}`;
          cpu.set(key, [...cpu.get(key) ?? [], (cpuMs * 1000) / result.requests]);
          rps.set(key, [...rps.get(key) ?? [], result.rps]);
        }
      }
    }
    if (sink.exports() === 0) throw new Error("The traced gateway exported nothing: tracing was not on");
    const report = render(cases.map((c) => c.name), sides.map((s) => s.name), cpu, rps);
    console.log(`\n${report.text}\n\nexports received from the traced gateway: ${sink.exports()}`);
    const out = `${ROOT}bench/results/tracing-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
    await Deno.mkdir(`${ROOT}bench/results`, { recursive: true });
    const json = {
      date: new Date().toISOString(),
      options,
      pinned,
      cpu: Object.fromEntries(cpu),
      rps: Object.fromEntries(rps),
    };
    await Deno.writeTextFile(out, JSON.stringify({ ...json, verdicts: report.verdicts }, null, 2) + "\n");
    console.log(`Result written to ${out}`);
    return report.verdicts.every((v) => v.pass) ? 0 : 1;
  } finally {
    Deno.removeSignalListener("SIGINT", stop);
    await processes.stopAll();
    await sink.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

const ON_LIMIT = 1.15;

function render(cases: string[], sides: string[], cpu: Map<string, number[]>, rps: Map<string, number[]>) {
  const fmt = (s: Stat) => `${Math.round(s.mean)} ±${Math.round(s.spreadPct / 2)}%`;
  const rows = [["case", ...sides.flatMap((side) => [`${side} rps`, `${side} cpu us/req`])]];
  const verdicts: { what: string; ratio: number; limit?: number; pass: boolean }[] = [];
  const notes: string[] = [];
  for (const name of cases) {
    const stats = new Map(sides.map((side) => [side, {
      cpu: stat(cpu.get(`${name}/${side}`) ?? []),
      rps: stat(rps.get(`${name}/${side}`) ?? []),
    }]));
    rows.push([name, ...[...stats.values()].flatMap((s) => [fmt(s.rps), fmt(s.cpu)])]);
    const cpuOf = (side: string) => stats.get(side)?.cpu;
    const off = cpuOf("off")!;
    const judge = (side: string, base: Stat, limit?: number) => {
      const ratio = cpuOf(side)!.mean / base.mean;
      verdicts.push({
        what: `${name}: CPU per request, ${side} / ${base === off ? "off" : "baseline"}`,
        ratio,
        limit,
        pass: limit === undefined || ratio <= limit,
      });
    };
    judge("on", off, ON_LIMIT);
    judge("sampled", off);
    const floorOff = cpuOf("floor off");
    if (floorOff) {
      const added = (side: string, base: Stat) => cpuOf(side)!.mean - base.mean;
      notes.push(
        `${name}: tracing adds ${Math.round(added("on", off))} us/req to the gateway, ` +
          `${Math.round(added("floor on", floorOff))} us/req to the floor proxy (the runtime's own spans and export)`,
      );
    }
    const baseline = cpuOf("baseline");
    // "No change" against the baseline is judged against the runs' own noise: the larger half-spread, at least 5%.
    if (baseline) judge("off", baseline, 1 + Math.max(0.05, Math.max(off.spreadPct, baseline.spreadPct) / 200));
  }
  const table = formatColumns(rows);
  const judged = formatColumns([
    ["target", "ratio", "limit", "verdict"],
    ...verdicts.map((v) => [
      v.what,
      `${v.ratio.toFixed(3)}x`,
      v.limit === undefined ? "" : `<= ${v.limit.toFixed(2)}x`,
      v.limit === undefined ? "(shown)" : v.pass ? "PASS" : "FAIL",
    ]),
  ]);
  return { text: `${table}\n\n${judged}\n\n${notes.join("\n")}`, verdicts };
}

if (import.meta.main) {
  Deno.exitCode = await main();
}

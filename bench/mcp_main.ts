/**
 * @module `deno task bench:mcp`: the MCP case alone (see ./mcp.ts): an SDK server, a gateway in front of it and wrk,
 * as separate processes pinned as the main bench pins them; it prints the table and writes the JSON result.
 */
import { MCP_CONCURRENCY, mcpSeconds, mcpTable, measureMcp, startMcpServer } from "./mcp.ts";
import { canPin, pinSelf, processSet } from "./processes.ts";
import { prepareGateway, ROOT, startGateway, startUpstream } from "./setup.ts";

const USAGE = `Usage: deno task bench:mcp [--seconds S] [--repeats N] [--warmup S] [--no-pin] [--profile DIR]

  --seconds S   seconds of each measured run (default 10)
  --repeats N   runs per side and concurrency, in turns (default 3)
  --warmup S    seconds of warm-up per side (default 2)
  --no-pin      do not pin processes to cores
  --profile DIR run the gateway under --cpu-prof and write its profile to DIR`;

/** The flags; undefined for --help. */
export function parseMcpArgs(args: readonly string[]) {
  const options: { seconds: number; repeats: number; warmup: number; pin: boolean; profileDir?: string } = {
    seconds: 10,
    repeats: 3,
    warmup: 2,
    pin: true,
  };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === "--help" || flag === "-h") return undefined;
    if (flag === "--no-pin") {
      options.pin = false;
      continue;
    }
    if (flag === "--profile") {
      options.profileDir = args[++i];
      if (!options.profileDir) throw new RangeError(`Cannot read --profile: give a directory\n\n${USAGE}`);
      continue;
    }
    const key = { "--seconds": "seconds", "--repeats": "repeats", "--warmup": "warmup" }[flag] as
      | "seconds"
      | "repeats"
      | "warmup"
      | undefined;
    const value = Number(args[++i]);
    if (!key || !Number.isInteger(value) || value < (key === "warmup" ? 0 : 1)) {
      throw new RangeError(`Cannot read ${flag} ${args[i] ?? ""}\n\n${USAGE}`);
    }
    options[key] = value;
  }
  return options;
}

async function main(): Promise<number> {
  let options;
  try {
    options = parseMcpArgs(Deno.args);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  if (!options) return console.log(USAGE), 0;
  const pinned = options.pin && await canPin() && await pinSelf(0);
  console.log(`Pinning: ${pinned ? "on (server, wrk and this runner on core 0; gateway on core 1)" : "off"}`);
  const processes = processSet(pinned);
  const dir = await Deno.makeTempDir({ prefix: "modelgate-bench-mcp-" });
  const budget = mcpSeconds(options) + 60;
  const watchdog = setTimeout(() => {
    console.error("Time budget exceeded: stopping the benchmark's processes");
    processes.stopAll().finally(() => Deno.exit(1));
  }, budget * 2 * 1000);
  try {
    const upstream = await startUpstream(processes);
    const server = await startMcpServer(processes, ROOT);
    const { config, token } = await prepareGateway(dir, Number(new URL(upstream.url).port), server.url);
    const gateway = await startGateway(processes, { dir, config, profileDir: options.profileDir });
    const rows = await measureMcp({ processes, dir, server, gateway, token }, {
      ...options,
      concurrency: MCP_CONCURRENCY,
    });
    console.log(mcpTable(rows).join("\n"));
    // A graceful stop, so that --cpu-prof writes its profile.
    await processes.stop(gateway.process);
    console.log(`Load average after: ${Deno.loadavg().join(" ")}`);
    const out = `${ROOT}bench/results/mcp-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
    await Deno.mkdir(`${ROOT}bench/results`, { recursive: true });
    await Deno.writeTextFile(out, JSON.stringify({ date: new Date().toISOString(), pinned, options, rows }, null, 2));
    console.log(`Result written to ${out}`);
    return 0;
  } catch (err) {
    console.error(`Benchmark failed: ${(err as Error).message}`);
    return 1;
  } finally {
    clearTimeout(watchdog);
    await processes.stopAll();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exitCode = await main();

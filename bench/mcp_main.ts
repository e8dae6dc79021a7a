/**
 * @module `deno task bench:mcp`: the MCP case alone (see ./mcp.ts): an SDK server, a gateway in front of it and wrk,
 * as separate processes pinned as the main bench pins them; it prints the table and writes the JSON result.
 */
import { MCP_CONCURRENCY, mcpSeconds, mcpTable, measureMcp, startMcpServer } from "./mcp.ts";
import { benchArgs, parseCountFlags, runBench } from "./memory_run.ts";
import { canPin, pinSelf, processSet } from "./processes.ts";
import { prepareGateway, ROOT, startGateway, startUpstream } from "./setup.ts";

const USAGE = `Usage: deno task bench:mcp [--seconds S] [--repeats N] [--warmup S] [--no-pin] [--profile DIR]

  --seconds S   seconds of each measured run (default 10)
  --repeats N   runs per side and concurrency, in turns (default 3)
  --warmup S    seconds of warm-up per side (default 2)
  --no-pin      do not pin processes to cores
  --profile DIR run the gateway under --cpu-prof and write its profile to DIR`;

/** The flags; undefined for --help. */
export function parseMcpArgs(
  args: readonly string[],
): { seconds: number; repeats: number; warmup: number; pin: boolean; profileDir?: string } | undefined {
  const at = args.indexOf("--profile");
  const profileDir = at === -1 ? undefined : args[at + 1];
  if (at !== -1 && !profileDir) throw new RangeError(`Cannot read --profile: give a directory\n\n${USAGE}`);
  const counts = parseCountFlags(
    (at === -1 ? args : [...args.slice(0, at), ...args.slice(at + 2)]).filter((flag) => flag !== "--no-pin"),
    {
      flags: { "--seconds": "seconds", "--repeats": "repeats", "--warmup": "warmup" },
      defaults: { seconds: 10, repeats: 3, warmup: 2 },
      usage: USAGE,
      valid: (key, value) => value >= (key === "warmup" ? 0 : 1),
    },
  );
  return counts && { ...counts, pin: !args.includes("--no-pin"), ...profileDir ? { profileDir } : {} };
}

async function main(): Promise<number> {
  const options = benchArgs(parseMcpArgs, USAGE);
  if (typeof options === "number") return options;
  const pinned = options.pin && await canPin() && await pinSelf(0);
  console.log(`Pinning: ${pinned ? "on (server, wrk and this runner on core 0; gateway on core 1)" : "off"}`);
  const processes = processSet(pinned);
  return await runBench("modelgate-bench-mcp-", processes, async (dir) => {
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
  }, (mcpSeconds(options) + 60) * 2);
}

if (import.meta.main) Deno.exitCode = await main();

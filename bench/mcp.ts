/**
 * @module The MCP case: `tools/call` of one tool, made directly to an MCP server (the official SDK's, over Streamable
 * HTTP) and through the gateway's /mcp on a session of its own, in alternating wrk runs: latency, and so the p50 and
 * p99 the gateway adds, requests/s, and the CPU per call of the gateway and of the server. `deno task bench` runs it
 * after its cases; `deno task bench:mcp` alone.
 */
import type { ProcessSet } from "./processes.ts";
import { percentile } from "./report.ts";
import type { Service } from "./setup.ts";
import { runWrk, type WrkResult, wrkScript } from "./wrk.ts";

/** One side's runs at one concurrency. */
export interface McpSide {
  p50Ms: number;
  p99Ms: number;
  rps: number;
  /** The gateway's CPU per call through it; the server's CPU per call direct. */
  cpuUsPerCall: number;
  /** The server's CPU per call, through the gateway (the same work as direct, plus its own sessions). */
  serverCpuUsPerCall?: number;
  errors: number;
}

/** The MCP case at one concurrency. */
export interface McpRow {
  concurrency: number;
  direct: McpSide;
  gateway: McpSide;
  addedP50Ms: number;
  addedP99Ms: number;
}

/** Where the case runs. */
export interface McpTarget {
  processes: ProcessSet;
  dir: string;
  server: Service;
  gateway: Service;
  token: string;
}

/** The headers of a request (on an open session, when given), with the gateway's token when it goes through it. */
function headers(session: string | undefined, token?: string): Record<string, string> {
  return {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } : {},
    ...token ? { authorization: `Bearer ${token}` } : {},
  };
}

/** Opens a session (initialize, then initialized) at `url`; its id. */
async function openSession(url: string, token?: string): Promise<string> {
  const init = await fetch(url, {
    method: "POST",
    headers: headers(undefined, token),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
    }),
  });
  const session = init.headers.get("mcp-session-id");
  await init.body?.cancel();
  if (!init.ok || !session) throw new Error(`Cannot open an MCP session at ${url}: HTTP ${init.status}`);
  const note = await fetch(url, {
    method: "POST",
    headers: headers(session, token),
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  await note.body?.cancel();
  return session;
}

/** The tool the case calls, under its name on the side it is called on. */
function callBody(tool: string, id: number | string): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: tool, arguments: { text: "hello from the bench" } },
  });
}

/**
 * The wrk script: a POST per call, each with an id of its own (a session's requests may not share one), and the
 * summary line that wrk.ts reads.
 */
export function mcpWrkScript(tool: string, requestHeaders: Record<string, string>): string {
  return wrkScript({ headers: requestHeaders, body: callBody(tool, "ID"), idMark: '"ID"' });
}

/** One wrk run against `url`, with the CPU the gateway and the server used over it. */
async function run(
  target: McpTarget,
  side: { url: string; script: string },
  connections: number,
  seconds: number,
): Promise<{ wrk: WrkResult; gatewayCpuMs: number; serverCpuMs: number }> {
  const { result, cpuMs: [gatewayCpuMs, serverCpuMs] } = await runWrk(
    target.processes,
    { connections, seconds, script: side.script, url: side.url },
    [target.gateway.process.pid, target.server.process.pid],
  );
  return { wrk: result, gatewayCpuMs, serverCpuMs };
}

/** The median of each side's figures over its repeats. */
function sideOf(runs: Awaited<ReturnType<typeof run>>[], cpu: "gateway" | "server"): McpSide {
  const median = (values: number[]) => percentile(values, 50);
  const calls = (r: (typeof runs)[number]) => Math.max(1, r.wrk.requests);
  const out: McpSide = {
    p50Ms: median(runs.map((r) => r.wrk.latencyUs.p50 / 1000)),
    p99Ms: median(runs.map((r) => r.wrk.latencyUs.p99 / 1000)),
    rps: median(runs.map((r) => r.wrk.rps)),
    cpuUsPerCall: median(runs.map((r) => ((cpu === "gateway" ? r.gatewayCpuMs : r.serverCpuMs) * 1000) / calls(r))),
    errors: runs.reduce((n, r) => n + Object.values(r.wrk.errors).reduce((a, b) => a + b, 0), 0),
  };
  if (cpu === "gateway") out.serverCpuUsPerCall = median(runs.map((r) => (r.serverCpuMs * 1000) / calls(r)));
  return out;
}

/** Runs the case at each concurrency, direct and through the gateway in turns, `repeats` times each. */
export async function measureMcp(
  target: McpTarget,
  options: { concurrency: number[]; seconds: number; warmup: number; repeats: number },
): Promise<McpRow[]> {
  const direct = { url: target.server.url, session: await openSession(target.server.url) };
  const through = {
    url: `${target.gateway.url}/mcp`,
    session: await openSession(`${target.gateway.url}/mcp`, target.token),
  };
  const script = async (name: string, text: string) => {
    const path = `${target.dir}/mcp-${name}.lua`;
    await Deno.writeTextFile(path, text);
    return path;
  };
  const sides = {
    direct: { url: direct.url, script: await script("direct", mcpWrkScript("echo", headers(direct.session))) },
    gateway: {
      url: through.url,
      script: await script("gateway", mcpWrkScript("bench_echo", headers(through.session, target.token))),
    },
  };
  if (options.warmup > 0) {
    await run(target, sides.direct, 16, options.warmup);
    await run(target, sides.gateway, 16, options.warmup);
  }
  const rows: McpRow[] = [];
  for (const concurrency of options.concurrency) {
    const directRuns = [];
    const gatewayRuns = [];
    for (let i = 0; i < options.repeats; i++) {
      directRuns.push(await run(target, sides.direct, concurrency, options.seconds));
      gatewayRuns.push(await run(target, sides.gateway, concurrency, options.seconds));
    }
    const d = sideOf(directRuns, "server");
    const g = sideOf(gatewayRuns, "gateway");
    rows.push({ concurrency, direct: d, gateway: g, addedP50Ms: g.p50Ms - d.p50Ms, addedP99Ms: g.p99Ms - d.p99Ms });
    console.log(`mcp c=${concurrency}: direct p50 ${d.p50Ms.toFixed(3)} ms, gateway p50 ${g.p50Ms.toFixed(3)} ms`);
  }
  return rows;
}

/** The concurrencies of the case: one call at a time, and a busy agent fleet's worth. */
export const MCP_CONCURRENCY = [1, 16];

/** Seconds the case takes at most (both sides, every concurrency and repeat, and the warm-up). */
export function mcpSeconds(options: { seconds: number; warmup: number; repeats: number }): number {
  return MCP_CONCURRENCY.length * 2 * options.repeats * (options.seconds + 0.3) + 2 * options.warmup + 5;
}

/** Starts the bench's MCP server on core 0 and waits for its port. */
export async function startMcpServer(processes: ProcessSet, root: string): Promise<Service> {
  const process = processes.start(
    "MCP server",
    Deno.execPath(),
    [
      "run",
      "--allow-net=127.0.0.1",
      "--allow-env",
      "--allow-read",
      "--config",
      `${root}tests/deno.json`,
      `${root}bench/mcp_server.ts`,
    ],
    { core: 0 },
  );
  const [, port] = await process.waitFor(/"listening":(\d+)/, 60_000);
  return { process, url: `http://127.0.0.1:${port}/mcp` };
}

/** The case as table lines. */
export function mcpTable(rows: readonly McpRow[]): string[] {
  if (rows.length === 0) return [];
  const ms = (n: number) => n.toFixed(3);
  return [
    "",
    "MCP tools/call (an SDK server's tool, direct and through /mcp; medians of the repeats)",
    "  c   direct p50/p99 ms   gateway p50/p99 ms   added p50/p99 ms   direct rps  gateway rps  gateway cpu/call" +
    "  server cpu/call (direct, via gateway)",
    ...rows.map((r) =>
      `  ${String(r.concurrency).padEnd(3)} ${`${ms(r.direct.p50Ms)}/${ms(r.direct.p99Ms)}`.padEnd(19)} ${
        `${ms(r.gateway.p50Ms)}/${ms(r.gateway.p99Ms)}`.padEnd(20)
      } ${`${ms(r.addedP50Ms)}/${ms(r.addedP99Ms)}`.padEnd(18)} ${String(Math.round(r.direct.rps)).padEnd(11)} ${
        String(Math.round(r.gateway.rps)).padEnd(12)
      } ${`${Math.round(r.gateway.cpuUsPerCall)} us`.padEnd(17)} ${Math.round(r.direct.cpuUsPerCall)} us, ${
        Math.round(r.gateway.serverCpuUsPerCall ?? 0)
      } us${r.direct.errors + r.gateway.errors ? ` ERRORS ${r.direct.errors + r.gateway.errors}` : ""}`
    ),
  ];
}

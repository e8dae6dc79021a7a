/**
 * @module `deno task bench`: starts the fake upstream, the gateway and wrk as separate processes, measures
 * every case direct and through the gateway, prints the table and targets, and writes the JSON result.
 */
import { estimateSeconds, parseBenchArgs, USAGE } from "./options.ts";
import { canPin, pinSelf, processSet, readMachineStat } from "./processes.ts";
import { measureBodies } from "./bodies.ts";
import { JS_RELAY_CASE_NAMES } from "./options.ts";
import { CASES, prepareGateway, probe, ROOT, startFloor, startGateway, startUpstream, tokenFor } from "./setup.ts";
import { measure } from "./run.ts";
import { MCP_CONCURRENCY, mcpSeconds, mcpTable, measureMcp, startMcpServer } from "./mcp.ts";
import { toolLoop, toolLoopTable } from "./tool_loop.ts";
import { measureWorkers, workersSeconds, workersTable } from "./workers.ts";

async function wrkVersion(): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("wrk", { args: ["--version"], stdout: "piped", stderr: "piped" }).output();
    return new TextDecoder().decode(out.stdout).split("\n")[0].split(" Copyright")[0].trim() || "wrk";
  } catch {
    return undefined;
  }
}

async function cpuModel(): Promise<string> {
  // Deno asks for --allow-all to read /proc itself.
  const out = await new Deno.Command("cat", { args: ["/proc/cpuinfo"], stdout: "piped", stderr: "null" }).output();
  const text = new TextDecoder().decode(out.stdout);
  return /^model name\s*:\s*(.+)$/m.exec(text)?.[1] ?? "unknown";
}

async function main(): Promise<number> {
  let options;
  try {
    options = parseBenchArgs(Deno.args);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  if (!options) return console.log(USAGE), 0;
  const wrk = await wrkVersion();
  if (!wrk) {
    console.error("Cannot run the benchmark: wrk is not installed (Debian/Ubuntu: sudo apt-get install -y wrk)");
    return 1;
  }
  const cases = CASES.filter((c) => options.cases.length === 0 || options.cases.includes(c.name));
  const pinned = options.pin && await canPin() && await pinSelf(0);
  console.log(
    pinned
      ? "Pinning: on (fake upstream, wrk and this runner on core 0; gateway and floor proxy on core 1)"
      : `Pinning: off (${options.pin ? "taskset or a second core is missing" : "--no-pin"})`,
  );
  const mcpTiming = { seconds: options.duration, warmup: options.warmup, repeats: options.repeats };
  const budget = estimateSeconds(options, cases) + workersSeconds(options) + mcpSeconds(mcpTiming);
  console.log(
    `Time budget: at most about ${Math.round(budget)} s; the run stops itself after ${Math.round(budget * 2)} s`,
  );
  const [load1] = Deno.loadavg();
  if (load1 > 0.5) {
    console.log(
      `Note: load average ${
        load1.toFixed(1)
      } before the start: other work shares this machine, so requests/s will be ` +
        "noisy; CPU per request is the steadier figure",
    );
  }

  const processes = processSet(pinned);
  const dir = await Deno.makeTempDir({ prefix: "modelgate-bench-" });
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    cleaned ??= processes.stopAll().finally(() => Deno.remove(dir, { recursive: true }).catch(() => {}));
  let aborted = false;
  const abort = (reason: string, code: number) => () => {
    aborted = true;
    console.error(`\n${reason}: stopping the benchmark's processes`);
    cleanup().finally(() => Deno.exit(code));
  };
  const onSignal = abort("Interrupted", 130);
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  const watchdog = setTimeout(abort("Time budget exceeded", 1), budget * 2 * 1000);
  const started = Date.now();
  const loadBefore = Deno.loadavg();
  const machineBefore = await readMachineStat();
  try {
    const upstream = await startUpstream(processes);
    const mcpServer = await startMcpServer(processes, ROOT);
    const { config, token, guardedToken } = await prepareGateway(
      dir,
      Number(new URL(upstream.url).port),
      mcpServer.url,
    );
    const gateway = await startGateway(processes, { dir, config, profileDir: options.profileDir });
    const floor = options.floor ? await startFloor(processes, upstream.url) : undefined;
    const jsRelay = options.floor && cases.some((c) => JS_RELAY_CASE_NAMES.includes(c.name))
      ? await startFloor(processes, upstream.url, undefined, true)
      : undefined;
    const unavailable = new Map<string, string>();
    for (const c of cases) {
      const directProblem = await probe(upstream.url, c.direct, c.stream, token);
      if (directProblem) throw new Error(`The fake upstream fails case "${c.name}": ${directProblem}`);
      const floorProblem = floor && await probe(floor.url, c.direct, c.stream, token);
      if (floorProblem) throw new Error(`The floor proxy fails case "${c.name}": ${floorProblem}`);
      const relayProblem = jsRelay && JS_RELAY_CASE_NAMES.includes(c.name) &&
        await probe(jsRelay.url, c.direct, c.stream, token);
      if (relayProblem) throw new Error(`The JS relay floor fails case "${c.name}": ${relayProblem}`);
      const problem = await probe(gateway.url, c.gateway, c.stream, tokenFor(c.gateway, { token, guardedToken }));
      if (problem) {
        unavailable.set(c.name, problem);
        console.log(`Case ${c.name} through the gateway is unavailable: ${problem}`);
      }
    }
    if (unavailable.has("messages")) {
      throw new Error(`The gateway fails the passthrough case: ${unavailable.get("messages")}`);
    }
    let serving = { gateway, floor };
    const restart = async () => {
      await processes.stop(serving.gateway.process);
      if (serving.floor) await processes.stop(serving.floor.process);
      serving = {
        gateway: await startGateway(processes, { dir, config, profileDir: options.profileDir }),
        floor: options.floor ? await startFloor(processes, upstream.url) : undefined,
      };
      return serving;
    };
    const result = await measure({
      options,
      cases,
      unavailable,
      processes,
      upstream,
      gateway,
      floor,
      jsRelay,
      token,
      guardedToken,
      dir,
      restart,
      bodies: options.bodyRounds > 0
        ? () => measureBodies({ processes, dir, config, token }, { sizeMb: 20, count: 10, rounds: options.bodyRounds })
        : undefined,
    });
    // On an Anthropic upstream (translated) and on a Responses upstream (passed through).
    const loop = [];
    for (const model of ["bench-claude", "bench-codex"]) {
      loop.push(
        ...await toolLoop({
          gatewayUrl: serving.gateway.url,
          upstreamUrl: upstream.url,
          token,
          gatewayPid: serving.gateway.process.pid,
          model,
        }),
      );
    }
    const mcp = await measureMcp(
      { processes, dir, server: mcpServer, gateway: serving.gateway, token },
      { ...mcpTiming, concurrency: MCP_CONCURRENCY },
    );
    // A graceful stop, so that --cpu-prof writes its profile.
    await processes.stop(serving.gateway.process);
    const workers = await measureWorkers({ processes, pinned, dir, options });
    const seconds = Math.round((Date.now() - started) / 1000);
    const machineAfter = await readMachineStat();
    const stealPct = (100 * (machineAfter.stealTicks - machineBefore.stealTicks)) /
      (machineAfter.totalTicks - machineBefore.totalTicks);
    console.log(
      `\n${
        [result.text, ...toolLoopTable(loop), ...mcpTable(mcp), ...workersTable(workers)].join("\n")
      }\n\nRun took ${seconds} s; load average before ${loadBefore.join(" ")}, after ${
        Deno.loadavg().join(" ")
      }; CPU time taken by the hypervisor (steal) ${
        stealPct.toFixed(1)
      }% (a few % is usual; far more slows every figure)`,
    );
    const out = options.out ?? `${ROOT}bench/results/${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
    await Deno.mkdir(out.slice(0, out.lastIndexOf("/")) || ".", { recursive: true });
    const machine = {
      cpu: await cpuModel(),
      cores: navigator.hardwareConcurrency,
      os: `${Deno.build.os} ${Deno.osRelease()}`,
      deno: Deno.version.deno,
      wrk,
      loadBefore,
      loadAfter: Deno.loadavg(),
      stealPct,
    };
    console.log(`Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.os}, deno ${machine.deno}, ${machine.wrk}`);
    const json = {
      date: new Date().toISOString(),
      seconds,
      machine,
      pinned,
      options,
      ...result.json,
      toolLoop: loop,
      mcp,
      workers,
    };
    await Deno.writeTextFile(out, JSON.stringify(json, null, 2) + "\n");
    console.log(`Result written to ${out}`);
    if (options.profileDir) {
      console.log(`CPU profile in ${options.profileDir} (summarize: deno task bench:profile DIR)`);
    }
    return 0;
  } catch (err) {
    // Once stopping, the run loop fails on the processes it lost; that is not news.
    if (!aborted) console.error(`Benchmark failed: ${(err as Error).message}`);
    return 1;
  } finally {
    clearTimeout(watchdog);
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
    await cleanup();
  }
}

if (import.meta.main) {
  Deno.exitCode = await main();
}

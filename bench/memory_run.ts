/**
 * @module What the benchmarks run alone (bench:bodies, bench:conversations, bench:flood, bench:mcp) share: flags that
 * are whole numbers, and a run in a temporary directory whose processes are stopped and the directory removed after
 * (on SIGINT too); the memory benchmarks' run adds the fake upstream and a gateway config and token.
 */
import { type ProcessSet, processSet } from "./processes.ts";
import { prepareGateway, startUpstream } from "./setup.ts";

/**
 * `args` read as `--flag N` pairs over `defaults` (each flag names a key); undefined for --help. A flag it does not
 * know, or a value `valid` refuses (by default any under 1), throws naming it, with `usage`.
 */
export function parseCountFlags<T extends Record<string, number>>(
  args: readonly string[],
  options: { flags: Record<string, keyof T>; defaults: T; usage: string; valid?(key: keyof T, value: number): boolean },
): T | undefined {
  const parsed: Record<string, number> = { ...options.defaults };
  const valid = options.valid ?? ((_key, value) => value >= 1);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--help" || args[i] === "-h") return undefined;
    const key = options.flags[args[i]];
    const value = Number(args[++i]);
    if (!key || !Number.isInteger(value) || !valid(key, value)) {
      throw new RangeError(`Cannot read "${args[i - 1]} ${args[i] ?? ""}"\n\n${options.usage}`);
    }
    parsed[key as string] = value;
  }
  return parsed as T;
}

/** What a memory benchmark runs with. */
export interface MemoryBench {
  processes: ProcessSet;
  dir: string;
  /** The gateway config's path, in `dir`. */
  config: string;
  token: string;
}

/**
 * Runs `run` in a fresh temporary directory; returns its exit code (1 when it throws). The processes are stopped and
 * the directory removed after, and also on SIGINT (exit 130) or, given `budgetS`, once that many seconds have passed
 * (exit 1).
 */
export async function runBench(
  prefix: string,
  processes: ProcessSet,
  run: (dir: string) => Promise<number>,
  budgetS?: number,
): Promise<number> {
  const dir = await Deno.makeTempDir({ prefix });
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    cleaned ??= processes.stopAll().finally(() => Deno.remove(dir, { recursive: true }).catch(() => {}));
  let aborted = false;
  const abort = (code: number) => {
    aborted = true;
    cleanup().finally(() => Deno.exit(code));
  };
  const onSignal = () => abort(130);
  Deno.addSignalListener("SIGINT", onSignal);
  const watchdog = budgetS === undefined ? undefined : setTimeout(() => {
    console.error("Time budget exceeded: stopping the benchmark's processes");
    abort(1);
  }, budgetS * 1000);
  try {
    return await run(dir);
  } catch (err) {
    // Once stopping, the run fails on the processes it lost; that is not news.
    if (!aborted) console.error(`Benchmark failed: ${(err as Error).message}`);
    return 1;
  } finally {
    clearTimeout(watchdog);
    Deno.removeSignalListener("SIGINT", onSignal);
    await cleanup();
  }
}

/** Runs `run` with a fresh fake upstream, config and token, as {@linkcode runBench} does. */
export function runMemoryBench(prefix: string, run: (bench: MemoryBench) => Promise<number>): Promise<number> {
  const processes = processSet(false);
  return runBench(prefix, processes, async (dir) => {
    const upstream = await startUpstream(processes);
    const { config, token } = await prepareGateway(dir, Number(new URL(upstream.url).port));
    return await run({ processes, dir, config, token });
  });
}

/** Parses `Deno.args` with `parse`, printing the usage (exit 0) or the problem (exit 2); the options, or the code. */
export function benchArgs<T>(parse: (args: readonly string[]) => T | undefined, usage: string): T | number {
  try {
    const options = parse(Deno.args);
    if (options === undefined) return console.log(usage), 0;
    return options;
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
}

/**
 * @module What the memory benchmarks (bench:bodies, bench:conversations) share: flags that are whole numbers, and a
 * run with the fake upstream, a gateway config and token in a temporary directory, everything stopped and removed
 * after (on SIGINT too).
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

/** Runs `run` with a fresh fake upstream, config and token; returns its exit code (1 when it throws). */
export async function runMemoryBench(
  prefix: string,
  run: (bench: MemoryBench) => Promise<number>,
): Promise<number> {
  const processes = processSet(false);
  const dir = await Deno.makeTempDir({ prefix });
  const onSignal = () => processes.stopAll().finally(() => Deno.exit(130));
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    const upstream = await startUpstream(processes);
    const { config, token } = await prepareGateway(dir, Number(new URL(upstream.url).port));
    return await run({ processes, dir, config, token });
  } catch (err) {
    console.error(`Benchmark failed: ${(err as Error).message}`);
    return 1;
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    await processes.stopAll();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
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

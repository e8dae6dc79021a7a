/**
 * @module The benchmark's child processes: spawning them (pinned to a core with taskset when the machine
 * allows), reading their memory from /proc, and stopping every one of them by pid, also on error and Ctrl-C.
 */

/** A started child; `lines` yields its stdout or stderr lines as they come, `tail` keeps the last of them. */
export interface Started {
  pid: number;
  name: string;
  child: Deno.ChildProcess;
  /** Resolves once the process has ended and all its output has been read. */
  finished: Promise<Deno.CommandStatus>;
  /** Resolves with the first line that matches, or rejects when the process ends or `ms` pass first. */
  waitFor(pattern: RegExp, ms: number): Promise<RegExpMatchArray>;
  /** The last lines of output, for error messages. */
  tail(): string;
}

/** Spawns and tracks the benchmark's processes; `stopAll` ends those still running. */
export interface ProcessSet {
  /** Whether children are pinned to cores. */
  readonly pinned: boolean;
  start(
    name: string,
    command: string,
    args: string[],
    options?: { core?: number; env?: Record<string, string> },
  ): Started;
  stop(started: Started): Promise<void>;
  stopAll(): Promise<void>;
}

/** VmRSS and VmHWM (peak) of /proc/<pid>/status, in bytes. */
export function parseProcStatus(text: string): { rssBytes: number; peakRssBytes: number } {
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+)\\s*kB`, "m").exec(text);
    if (!match) throw new Error(`Cannot read ${name} from /proc status`);
    return Number(match[1]) * 1024;
  };
  return { rssBytes: field("VmRSS"), peakRssBytes: field("VmHWM") };
}

/** CPU time (user + system) of /proc/<pid>/stat in clock ticks; the name field may hold spaces and parentheses. */
export function parseProcStat(text: string): number {
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // After the name: state is field 3 of the stat line, utime field 14, stime field 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (!Number.isFinite(ticks)) throw new Error("Cannot read CPU time from /proc stat");
  return ticks;
}

/** Milliseconds of CPU a running process has used, all threads (clock ticks are 10 ms on Linux). */
export async function readCpuMs(pid: number): Promise<number> {
  return parseProcStat(await catProc(pid, "stat")) * 10;
}

/**
 * The machine's CPU time from the first line of /proc/stat, in clock ticks: all of it, and the part a hypervisor
 * gave to other machines while this one wanted to run (steal), which makes every figure of a run slower.
 */
export function parseMachineStat(text: string): { totalTicks: number; stealTicks: number } {
  const fields = text.slice(0, text.indexOf("\n")).trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal (guest time is already counted in user).
  const ticks = fields.slice(1, 9).map(Number);
  if (fields[0] !== "cpu" || ticks.length < 8 || ticks.some((t) => !Number.isFinite(t))) {
    throw new Error("Cannot read the CPU times from /proc/stat");
  }
  return { totalTicks: ticks.reduce((a, b) => a + b, 0), stealTicks: ticks[7] };
}

/** The machine's CPU times now (see {@linkcode parseMachineStat}). */
export async function readMachineStat(): Promise<{ totalTicks: number; stealTicks: number }> {
  return parseMachineStat(await cat("/proc/stat"));
}

async function catProc(pid: number, file: string): Promise<string> {
  return await cat(`/proc/${pid}/${file}`).catch(() => {
    throw new Error(`Cannot read /proc/${pid}/${file}: the process is gone`);
  });
}

async function cat(path: string): Promise<string> {
  const out = await new Deno.Command("cat", { args: [path], stdout: "piped", stderr: "null" }).output();
  if (!out.success) throw new Error(`Cannot read ${path}`);
  return new TextDecoder().decode(out.stdout);
}

/** The memory of a running process (read with cat: Deno asks for --allow-all to read /proc itself). */
export async function readMemory(pid: number): Promise<{ rssBytes: number; peakRssBytes: number }> {
  return parseProcStatus(await catProc(pid, "status"));
}

async function commandWorks(command: string, args: string[]): Promise<boolean> {
  try {
    const { success } = await new Deno.Command(command, { args, stdout: "null", stderr: "null" }).output();
    return success;
  } catch {
    return false;
  }
}

/** Whether pinning is possible: taskset runs and there are at least two cores. */
export async function canPin(): Promise<boolean> {
  return navigator.hardwareConcurrency >= 2 && await commandWorks("taskset", ["-c", "0", "true"]);
}

/** Pins this process (all its threads) to one core. */
export async function pinSelf(core: number): Promise<boolean> {
  return await commandWorks("taskset", ["-a", "-pc", String(core), String(Deno.pid)]);
}

function collectLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let pending = "";
  return stream.pipeTo(
    new WritableStream({
      write(chunk) {
        pending += decoder.decode(chunk, { stream: true });
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) onLine(line);
      },
      close() {
        if (pending) onLine(pending);
      },
    }),
  ).catch(() => {});
}

/** Creates the set; `pinned` decides whether `core` options are honoured. */
export function processSet(pinned: boolean): ProcessSet {
  const running = new Set<Started>();
  function start(
    name: string,
    command: string,
    args: string[],
    options: { core?: number; env?: Record<string, string> } = {},
  ): Started {
    const argv = pinned && options.core !== undefined
      ? ["taskset", "-c", String(options.core), command, ...args]
      : [command, ...args];
    const child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      env: options.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const recent: string[] = [];
    const waiters = new Set<{ pattern: RegExp; resolve(m: RegExpMatchArray): void }>();
    const onLine = (line: string) => {
      recent.push(line);
      if (recent.length > 40) recent.shift();
      for (const waiter of waiters) {
        const match = line.match(waiter.pattern);
        if (match) {
          waiters.delete(waiter);
          waiter.resolve(match);
        }
      }
    };
    const drained = Promise.all([collectLines(child.stdout, onLine), collectLines(child.stderr, onLine)]);
    const started: Started = {
      pid: child.pid,
      name,
      child,
      finished: Promise.all([child.status, drained]).then(([status]) => status),
      tail: () => recent.join("\n"),
      waitFor(pattern, ms) {
        const { promise, resolve, reject } = Promise.withResolvers<RegExpMatchArray>();
        const waiter = { pattern, resolve };
        waiters.add(waiter);
        const timer = setTimeout(() => reject(new Error(`${name} did not print ${pattern} within ${ms} ms`)), ms);
        child.status.then(() => drained).then(() =>
          reject(new Error(`${name} exited before printing ${pattern}:\n${recent.join("\n")}`))
        );
        return promise.finally(() => {
          clearTimeout(timer);
          waiters.delete(waiter);
        });
      },
    };
    running.add(started);
    child.status.then(() => running.delete(started));
    return started;
  }

  async function stop(started: Started): Promise<void> {
    if (!running.has(started)) return await drainStatus(started);
    try {
      started.child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    const timer = setTimeout(() => {
      try {
        started.child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    }, 5_000);
    await drainStatus(started);
    clearTimeout(timer);
  }

  return {
    pinned,
    start,
    stop,
    async stopAll() {
      await Promise.all([...running].map(stop));
    },
  };
}

async function drainStatus(started: Started): Promise<void> {
  await started.finished;
}

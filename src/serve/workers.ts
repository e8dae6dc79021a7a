/**
 * @module `serve --workers N`: how many serving workers, and their supervisor, which starts N Web Workers running
 * the gateway on one port, drops the process's write permission once every one has its KV open, passes
 * SIGINT/SIGTERM on to all, and stops the whole gateway when one of them fails.
 *
 * Why Web Workers in one process: they inherit the process's permissions and deno.json (no command line to rebuild,
 * and `deno compile` keeps working), they share one copy of the runtime, and each has its own isolate and event loop,
 * so each uses a core. `Deno.serve({ reusePort: true })` lets every worker listen on the same port, and Linux spreads
 * incoming connections over them. `deno serve --parallel` would own the port, the listen line and shutdown, which
 * `serve` takes from the config and drains gracefully.
 */
import { poolMemory } from "../conversations/memory_pool.ts";
import { onDeploy, type ProcessNeeds, type ServeFlags } from "./runtime.ts";

type Env = (name: string) => string | undefined;

/** The most workers one gateway runs; more than a machine has cores only adds memory. */
const MAX_WORKERS = 64;

/** A message from the supervisor to a worker. */
export type FromSupervisor =
  | {
    type: "start";
    flags: ServeFlags;
    index: number;
    sealerSecret: Uint8Array;
    socketMemory: SharedArrayBuffer;
  }
  /** Listen now; `port` undefined means the config's (the first worker), else the port the first one got. */
  | { type: "listen"; port: number | undefined }
  | { type: "stop" };

/** A message from a worker to its supervisor. */
export type ToSupervisor =
  | { type: "ready"; needs: ProcessNeeds }
  | { type: "listening"; hostname: string; port: number; source: string }
  | { type: "done"; code: number }
  | { type: "failed"; message: string };

/** A started worker, as the supervisor holds it. */
export interface WorkerHandle {
  post(message: FromSupervisor): void;
  terminate(): void;
}

/** What a worker tells its supervisor: its messages, and an error nothing in it caught. */
export interface WorkerEvents {
  message(message: ToSupervisor): void;
  crash(reason: string): void;
}

/** What the supervisor needs of the process; tests pass workers of their own. */
export interface SupervisorIo {
  err(text: string): void;
  spawn(index: number, events: WorkerEvents): WorkerHandle;
  /** Runs once every worker has its KV open (the entry point drops the write permission, for all workers at once). */
  onKvOpen?(needs?: ProcessNeeds): void;
  /** Calls `stop` on SIGINT/SIGTERM; answers the way to stop listening. */
  onSignal(stop: () => void): () => void;
}

/**
 * The number of serving workers: `--workers` (else $MODELGATE_WORKERS), a whole number or `auto` for one per core;
 * 1 when neither is set. More than one needs Linux, where SO_REUSEPORT spreads connections over the workers.
 */
export function workerCount(
  flag: string | true | undefined,
  env: Env,
  platform: { os: string; cores: number },
): number {
  const [value, name] = flag !== undefined
    ? [String(flag), "--workers"]
    : [env("MODELGATE_WORKERS"), "MODELGATE_WORKERS"];
  if (value === undefined || value === "") return 1;
  const count = value === "auto" ? platform.cores : /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(count) || count < 1 || count > MAX_WORKERS) {
    throw new Error(`${name} must be a whole number from 1 to ${MAX_WORKERS} or "auto" (one per core), not "${value}"`);
  }
  if (count > 1 && platform.os !== "linux") {
    throw new Error(
      `${name} is ${count}, but several workers can share one port only on Linux; on ${platform.os} run one worker ` +
        "per gateway, and several gateways on one KV behind a load balancer (see docs/scaling.md)",
    );
  }
  if (count > 1 && onDeploy(env)) {
    throw new Error(`${name} is ${count}, but Deno Deploy runs and scales the gateway's isolates itself; unset it`);
  }
  return count;
}

/**
 * A worker running worker.ts (tests give another module); an error nothing in it caught ends it and is reported,
 * not the process's end.
 */
export function spawnWorker(
  index: number,
  events: WorkerEvents,
  module = new URL("./worker.ts", import.meta.url),
): WorkerHandle {
  const worker = new Worker(module, {
    type: "module",
    name: `modelgate worker ${index}`,
  });
  worker.onmessage = (event: MessageEvent<ToSupervisor>) => events.message(event.data);
  worker.onerror = (event) => {
    event.preventDefault();
    events.crash(event.message);
  };
  worker.onmessageerror = () => events.crash("a message from the worker could not be read");
  return { post: (message) => worker.postMessage(message), terminate: () => worker.terminate() };
}

/** SIGINT and SIGTERM call `stop`, where the platform has signal listeners. */
export function stopSignals(stop: () => void): () => void {
  const signals: Deno.Signal[] = [];
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    try {
      Deno.addSignalListener(signal, stop);
      signals.push(signal);
    } catch {
      // No signal listeners here: the platform stops the process itself.
    }
  }
  return () => signals.forEach((signal) => Deno.removeSignalListener(signal, stop));
}

/**
 * Runs `count` workers of the gateway on one port until SIGINT/SIGTERM; returns the exit code. Every worker opens the
 * KV and builds its app before any listens, so the write permission is gone before the first request. The first
 * worker listens on the config's port (port 0 picks a free one) and the others on the port it got. A worker that fails
 * stops the gateway: the others drain as on SIGTERM and the exit code is 1. It is not restarted in place: the process
 * may no longer open the KV file, and whatever supervises the process restarts it whole.
 */
export async function superviseWorkers(
  count: number,
  flags: ServeFlags,
  io: SupervisorIo,
): Promise<number> {
  const sealerSecret = crypto.getRandomValues(new Uint8Array(32));
  const socketMemory = poolMemory();
  const ready = Promise.withResolvers<void>();
  const failure = Promise.withResolvers<never>();
  failure.promise.catch(() => {});
  const allDone = Promise.withResolvers<void>();
  const listening = Array.from({ length: count }, () => Promise.withResolvers<ToSupervisor & { type: "listening" }>());
  const codes: (number | undefined)[] = Array(count).fill(undefined);
  let readyCount = 0;
  const needs: ProcessNeeds = {};
  let serving = false;
  let failed = false;
  const handles: WorkerHandle[] = [];
  const stopAll = () => handles.forEach((handle, i) => codes[i] === undefined && handle.post({ type: "stop" }));
  const ended = (i: number, code: number) => {
    if (codes[i] !== undefined) return;
    codes[i] = code;
    handles[i].terminate();
    if (codes.every((c) => c !== undefined)) allDone.resolve();
  };
  const fail = (i: number, reason: string) => {
    ended(i, 1);
    if (failed) return;
    failed = true;
    if (!serving) return failure.reject(new Error(reason));
    io.err(`modelgate worker ${i + 1} failed: ${reason}; stopping the other workers, then the gateway (exit 1)`);
    stopAll();
  };
  for (let i = 0; i < count; i++) {
    handles.push(io.spawn(i + 1, {
      message(message) {
        if (message.type === "ready") {
          // Every worker runs the same config: one that needs to start programs speaks for all.
          needs.run ||= message.needs.run === true;
          if (++readyCount === count) ready.resolve();
        } else if (message.type === "listening") listening[i].resolve(message);
        else if (message.type === "done") ended(i, message.code);
        else if (message.type === "failed") fail(i, message.message);
      },
      crash: (reason) => fail(i, reason),
    }));
    handles[i].post({ type: "start", flags, index: i + 1, sealerSecret, socketMemory });
  }
  let address: ToSupervisor & { type: "listening" };
  try {
    await Promise.race([ready.promise, failure.promise]);
    io.onKvOpen?.(needs);
    handles[0].post({ type: "listen", port: undefined });
    address = await Promise.race([listening[0].promise, failure.promise]);
    for (const handle of handles.slice(1)) handle.post({ type: "listen", port: address.port });
    await Promise.race([Promise.all(listening.map((l) => l.promise)), failure.promise]);
  } catch (err) {
    // Nothing was served yet: the reason is the same in every worker (a config or KV problem), so it is printed once.
    io.err(err instanceof Error ? err.message : String(err));
    handles.forEach((handle) => handle.terminate());
    return 1;
  }
  const unlisten = io.onSignal(stopAll);
  serving = true;
  io.err(
    `modelgate listening on http://${address.hostname}:${address.port} (config ${address.source}, ${count} workers)`,
  );
  await allDone.promise;
  unlisten();
  return failed ? 1 : Math.max(...codes.map((code) => code ?? 1));
}

/**
 * @module The composition root of `serve`: load the config, open KV, build the app (its dependencies: deps.ts), say
 * the start's warnings, bind the port, and on SIGINT/SIGTERM stop accepting, let in-flight work finish within the
 * grace period, then close KV.
 */
import { recordFirstServed, undatedModels } from "../access/model_dates.ts";
import { adminKeyFrom } from "../access/operator.ts";
import { seedGroups } from "../access/store.ts";
import { createApp } from "../app.ts";
import { startGatewayBatches } from "../batches/start.ts";
import { COMPACTION_KEY_ENV, createSealer, sealerFromEnv } from "../conversations/seal.ts";
import { isLoopback } from "../core/addresses.ts";
import type { Config } from "../core/config.ts";
import { loadConfigFrom } from "../core/config_load.ts";
import { GatewayError } from "../core/errors.ts";
import { batchedWriter, createLogger } from "../observe/log.ts";
import { mcpWarnings } from "../mcp/secrets.ts";
import { loadTracing } from "../observe/tracing_switch.ts";
import { buildDeps, upstreamTransports } from "./deps.ts";
import {
  checkListen,
  type KvOpenIo,
  listenAddress,
  listenError,
  logSettings,
  onDeploy,
  openKvStore,
  type ProcessNeeds,
  type ServeFlags,
} from "./runtime.ts";

/** How long connections cut at the end of the grace period may take to close before the gateway stops anyway. */
const CUT_WAIT_MS = 1000;

/**
 * The grace period after SIGINT/SIGTERM and the waits after the cut. On Deno Deploy, which kills the process 5 s after
 * its SIGINT (docs/operating.md, "Deno Deploy"), they take at most 3 s, so the usage flush, the leased shares' return
 * and KV's close have the last 2 s.
 */
export function stopTimes(graceMs: number, deploy: boolean): { graceMs: number; cutMs: number } {
  return deploy ? { graceMs: Math.min(graceMs, 2000), cutMs: 500 } : { graceMs, cutMs: CUT_WAIT_MS };
}

/** Output channels and environment of the process. */
export interface ServeIo extends KvOpenIo {
  err(text: string): void;
  env(name: string): string | undefined;
  /** Set when this gateway is one serving worker of `serve --workers N` (worker.ts); else it runs alone. */
  worker?: WorkerRole;
}

/**
 * What differs for one of several serving workers on one port: its supervisor (workers.ts) says when to listen
 * and on which port, prints the listen line once for all, and passes SIGINT/SIGTERM on as a stop.
 */
export interface WorkerRole {
  /** The worker's number, from 1; every log line carries it as `worker`. */
  index: number;
  /** Resolves with the port to listen on (undefined: the config's) once every worker has its KV open. */
  ready(needs: ProcessNeeds): Promise<number | undefined>;
  listening(address: { hostname: string; port: number; source: string }): void;
  /** Takes the gateway's stop, which the supervisor calls on SIGINT/SIGTERM. */
  onStop(stop: () => void): void;
  /** One sealer secret for all workers when MODELGATE_COMPACTION_KEY is unset, so every worker opens the others' items. */
  sealerSecret: Uint8Array;
  /** The count of socket memory all workers share, so responses_socket.total_memory_bytes bounds the process. */
  socketMemory: SharedArrayBuffer;
}

/**
 * The start's warning when the console and admin API are on but will answer for no host name: the gateway listens
 * beyond loopback and `public_hosts` lists nothing.
 */
export function publicHostsWarning(config: Config, adminKey: string | undefined): string | undefined {
  if (!adminKey || config.public_hosts.length > 0 || isLoopback(config.listen.host)) return undefined;
  return `warning: listening on ${config.listen.host} with no public_hosts: the console and admin API answer for no ` +
    "host name; list the names they are reached by in public_hosts";
}

/**
 * True when the config has stdio MCP servers, which the gateway starts as programs (Deno Deploy runs them too, see
 * docs/mcp.md); the process keeps its permission to start programs only then.
 */
export function mcpCommands(config: Config): boolean {
  return config.mcp_servers.some((server) => server.command);
}

/**
 * The start's line for each demo upstream (see docs/configuration.md, "The demo upstream"): it is on, its models answer
 * with no provider, and it is not for real traffic.
 */
export function demoNotices(config: Config): string[] {
  return config.upstreams.filter((upstream) => upstream.protocol === "demo").map((upstream) => {
    const models = upstream.models.map((model) => typeof model === "string" ? model : model.id).join(", ");
    return `demo: upstream "${upstream.name}" is on (protocol: demo): its models (${models}) answer by themselves, with no ` +
      "provider and no key; it is not for real traffic (a config with production: true refuses it)";
  });
}

/** Runs the gateway until SIGINT/SIGTERM (or its supervisor's stop, as a worker); returns the exit code. */
export async function serve(flags: ServeFlags, io: ServeIo): Promise<number> {
  const { worker } = io;
  // Workers after the first would repeat the first one's start warnings word for word.
  const warn = worker && worker.index > 1 ? () => {} : io.err;
  const loaded = await loadConfigFrom(flags.config, io.env);
  const { source } = loaded;
  const config: Config = { ...loaded.config, listen: listenAddress(loaded.config.listen, flags, io.env) };
  // A port another program holds stops a lone gateway at once, before anything is opened (workers check it when told
  // to listen: every one of them would find it taken once the first listens).
  if (!worker && config.listen.port !== 0) checkListen(config.listen);
  // A key too short to be safe stops the start before anything is opened.
  const hostsWarning = publicHostsWarning(config, adminKeyFrom(io.env));
  if (hostsWarning) warn(hostsWarning);
  // console.log writes each batch whole and in order, on a terminal, in a pipe and on Deno Deploy alike.
  const lines = batchedWriter((text) => console.log(text));
  const logger = createLogger(logSettings(config.log, io.env), { write: lines.write, now: () => new Date() });
  const log = worker ? (line: Record<string, unknown>) => logger({ worker: worker.index, ...line }) : logger;
  // A stdio MCP server is a program the gateway starts: the process keeps the permission to start programs only then.
  const needs: ProcessNeeds = { run: mcpCommands(config) };
  const store = await openKvStore(config.kv_path, source, { ...io, log, onKvOpen: () => io.onKvOpen?.(needs) });
  await seedGroups(store, config.groups);
  const firstServed = await recordFirstServed(store.kv, undatedModels(config), new Date(), { writes: store.writes });
  const closing = new AbortController();
  const stopping = new AbortController();
  const transports = upstreamTransports(config, { env: io.env, log });
  const fromEnv = sealerFromEnv(io.env);
  const sealer = worker && !fromEnv.fromEnv ? createSealer(worker.sealerSecret) : fromEnv.sealer;
  if (!fromEnv.fromEnv) {
    warn(
      `warning: ${COMPACTION_KEY_ENV} is not set; compaction items this gateway makes open only until it stops, ` +
        "and only on this instance",
    );
  }
  for (const [name, { problem }] of transports) {
    if (problem) warn(`warning: upstream "${name}" has no key: ${problem}; its models answer 503`);
  }
  for (const notice of demoNotices(config)) warn(notice);
  for (const warning of mcpWarnings(config, io.env)) warn(warning);
  // Off, no observer is made, no request sees a trace and the tracing code is never loaded.
  const tracing = await loadTracing(io.env, config.currency);
  const deps = buildDeps(config, store, {
    env: io.env,
    observers: tracing ? [tracing] : [],
    closing: closing.signal,
    stopping: stopping.signal,
    log,
    transports,
    firstServed,
    sealer,
    socketMemory: worker?.socketMemory,
  });
  // Batches the gateway runs itself go on in the background, on every instance that shares the KV, and so does the
  // sweep that counts native batches once they end.
  const batches = startGatewayBatches(deps);
  deps.batchRunner = batches.api;
  const port = worker ? await worker.ready(needs) ?? config.listen.port : config.listen.port;
  const address = { host: config.listen.host, port };
  const closeAll = async () => {
    // The requests of batches still running end (or are cut and given back) before their usage is flushed.
    await Promise.all([batches.runner.stop(), batches.sweep.stop()]);
    // Usage batched since the last flush, and pins being written, reach KV before it closes.
    await deps.operator.close();
    await deps.mcp.close();
    await deps.pins.settled();
    lines.flush();
    store.close();
  };
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    // A shared port would also take in another gateway started on it by mistake, and split its traffic silently: the
    // first worker makes sure nothing holds the port (a plain bind fails beside any listener) before they share it.
    if (worker?.index === 1 && port !== 0) checkListen(address);
    server = Deno.serve({
      hostname: config.listen.host,
      port,
      // Workers share the port; the kernel spreads connections over them (workers.ts says why threads).
      reusePort: worker !== undefined,
      onListen: ({ hostname, port }) =>
        worker
          ? worker.listening({ hostname, port, source })
          : io.err(`modelgate listening on http://${hostname}:${port} (config ${source})`),
    }, createApp(deps));
  } catch (err) {
    // What was opened would keep the process alive: it ends here, and the reason is the listen's.
    await closeAll();
    throw listenError(address, err);
  }
  const times = stopTimes(config.shutdown_grace_ms, onDeploy(io.env));
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  let cutTimer: ReturnType<typeof setTimeout> | undefined;
  const pastGrace = Promise.withResolvers<void>();
  const stop = () => {
    if (graceTimer !== undefined) return;
    warn(`modelgate stopping: finishing in-flight requests for up to ${times.graceMs} ms`);
    // The runtime closes idle keep-alive connections at once; answers still to come say the connection ends.
    stopping.abort();
    void batches.runner.stop(times.graceMs);
    void batches.sweep.stop();
    let shut = false;
    const shutdown = () => {
      if (!shut) void server.shutdown();
      shut = true;
    };
    graceTimer = setTimeout(() => {
      closing.abort(new GatewayError("unavailable", "The gateway is shutting down"));
      // What was cut gets a moment to say so and close (the runtime's shutdown would close sockets with words of its
      // own). Then the process stops whatever a socket still holds: the runtime's shutdown waits for every connection,
      // and one whose client reads nothing (not even a close) would hold it for as long as that client stays.
      cutTimer = setTimeout(() => {
        shutdown();
        cutTimer = setTimeout(pastGrace.resolve, times.cutMs);
      }, times.cutMs);
    }, times.graceMs);
    // The runtime's shutdown closes upgraded sockets at once: Responses sockets finish their running responses (within
    // the grace period) and close themselves first.
    void deps.sockets.drained().then(shutdown);
  };
  const signals: Deno.Signal[] = [];
  if (worker) worker.onStop(stop);
  else {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      try {
        Deno.addSignalListener(signal, stop);
        signals.push(signal);
      } catch {
        // A platform without signal listeners stops the process itself.
      }
    }
  }
  await Promise.race([server.finished, pastGrace.promise]);
  clearTimeout(graceTimer);
  clearTimeout(cutTimer);
  // The signal listeners stay until everything is written: a second SIGTERM meanwhile (a supervisor repeating itself)
  // must not kill the process mid-flush.
  await closeAll();
  for (const signal of signals) Deno.removeSignalListener(signal, stop);
  return 0;
}

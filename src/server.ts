/**
 * @module The composition root of `serve`: load the config, open KV, build the app, bind the port, and on
 * SIGINT/SIGTERM stop accepting, let in-flight work finish within the grace period, then close KV.
 */
import { createApp, type Deps } from "./app.ts";
import { type Config, configPath, loadConfig } from "./config.ts";
import { GatewayError } from "./errors.ts";
import type { Observer } from "./exchange.ts";
import { createOperator } from "./operator.ts";
import { buildRouteTable, upstreamsWithoutKey } from "./routing.ts";
import { openStore, seedGroups, type Store } from "./store.ts";
import { createHealthBoard } from "./upstream/health.ts";

/** Output channels and environment of the process. */
export interface ServeIo {
  err(text: string): void;
  env(name: string): string | undefined;
}

/** Options for {@linkcode buildDeps}. */
export interface BuildDepsOptions {
  env(name: string): string | undefined;
  log(line: Record<string, unknown>): void;
  observers?: Observer[];
  closing?: AbortSignal;
  fetch?: typeof fetch;
  /** The clock; tests freeze it so limit windows cannot roll over mid-test. */
  now?(): Date;
}

/** The app's dependencies for a loaded config and an open store; `deps.operator.close()` ends them. */
export function buildDeps(config: Config, store: Store, options: BuildDepsOptions): Deps {
  const now = options.now ?? (() => new Date());
  const operator = createOperator(config, store, { env: options.env, log: options.log, now: () => now().getTime() });
  return {
    config,
    table: buildRouteTable(config, options.env),
    store,
    fetch: options.fetch ?? globalThis.fetch,
    now,
    log: options.log,
    health: createHealthBoard(config.routing, () => Date.now()),
    random: Math.random,
    observers: [...operator.observers, ...options.observers ?? []],
    closing: options.closing,
    operator,
  };
}

/** Runs the gateway until SIGINT/SIGTERM; returns the exit code. */
export async function serve(configFlag: string | undefined, io: ServeIo): Promise<number> {
  const file = configPath(configFlag, io.env);
  const config = await loadConfig(file);
  const store = await openStore(io.env("MODELGATE_KV") || config.kv_path);
  await seedGroups(store, config.groups);
  for (const upstream of upstreamsWithoutKey(config, io.env)) {
    io.err(
      `warning: upstream "${upstream.name}" has no key: ${upstream.api_key_env} is not set; its models answer 503`,
    );
  }
  const encoder = new TextEncoder();
  const closing = new AbortController();
  const deps = buildDeps(config, store, {
    env: io.env,
    closing: closing.signal,
    log: (line) =>
      Deno.stdout.write(encoder.encode(JSON.stringify({ time: new Date().toISOString(), ...line }) + "\n")),
  });
  const server = Deno.serve({
    hostname: config.listen.host,
    port: config.listen.port,
    onListen: ({ hostname, port }) => io.err(`modelgate listening on http://${hostname}:${port} (config ${file})`),
  }, createApp(deps));
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const stop = () => {
    if (graceTimer !== undefined) return;
    io.err(`modelgate stopping: finishing in-flight requests for up to ${config.shutdown_grace_ms} ms`);
    graceTimer = setTimeout(
      () => closing.abort(new GatewayError("unavailable", "The gateway is shutting down")),
      config.shutdown_grace_ms,
    );
    server.shutdown();
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
  clearTimeout(graceTimer);
  Deno.removeSignalListener("SIGINT", stop);
  Deno.removeSignalListener("SIGTERM", stop);
  // Usage batched since the last flush is written before KV closes.
  await deps.operator.close();
  store.close();
  return 0;
}

/** @module The composition root of `serve`: load the config, open KV, build the app and bind the port. */
import { createApp } from "./app.ts";
import { configPath, loadConfig } from "./config.ts";
import { buildRouteTable, upstreamsWithoutKey } from "./routing.ts";
import { openStore, seedGroups } from "./store.ts";

/** Output channels and environment of the process. */
export interface ServeIo {
  err(text: string): void;
  env(name: string): string | undefined;
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
  const app = createApp({
    config,
    table: buildRouteTable(config, io.env),
    store,
    fetch: globalThis.fetch,
    now: () => new Date(),
    log: (line) =>
      Deno.stdout.write(encoder.encode(JSON.stringify({ time: new Date().toISOString(), ...line }) + "\n")),
  });
  const server = Deno.serve({
    hostname: config.listen.host,
    port: config.listen.port,
    onListen: ({ hostname, port }) => io.err(`modelgate listening on http://${hostname}:${port} (config ${file})`),
  }, app);
  const stop = () => server.shutdown();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
  Deno.removeSignalListener("SIGINT", stop);
  Deno.removeSignalListener("SIGTERM", stop);
  store.close();
  return 0;
}

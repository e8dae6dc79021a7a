/**
 * @module The floor proxy (floor_proxy.ts) in N Web Workers sharing one port, as `serve --workers N` shares it: what
 * the same machine gives a bare relay from a second worker, beside what it gives the gateway.
 * Usage: floor_workers.ts UPSTREAM_URL N; prints {"listening":PORT} once every worker listens.
 */
/// <reference lib="deno.worker" />
import { createFloorProxy } from "./floor_proxy.ts";

/** A worker: listens on the port it is sent (0 for a free one) and answers the port it got. */
function serveInWorker(): void {
  self.onmessage = (event: MessageEvent<{ upstream: string; port: number }>) => {
    Deno.serve({
      hostname: "127.0.0.1",
      port: event.data.port,
      reusePort: true,
      onListen: ({ port }) => self.postMessage(port),
    }, createFloorProxy(event.data.upstream));
  };
}

/** Starts `count` workers, the first on a free port and the rest on the port it got. */
async function main(upstream: string, count: number): Promise<void> {
  let port = 0;
  for (let i = 0; i < count; i++) {
    const worker = new Worker(import.meta.url, { type: "module" });
    const listening = Promise.withResolvers<number>();
    worker.onmessage = (event: MessageEvent<number>) => listening.resolve(event.data);
    worker.postMessage({ upstream, port });
    port = await listening.promise;
  }
  console.log(JSON.stringify({ listening: port }));
}

// A worker's entry module is "main" too, so the worker scope is what tells the two apart.
if (typeof WorkerGlobalScope !== "undefined" && self instanceof WorkerGlobalScope) {
  serveInWorker();
} else if (import.meta.main) {
  const [upstream, count] = [Deno.args[0], Number(Deno.args[1] ?? 1)];
  if (!upstream || !Number.isInteger(count) || count < 1) {
    console.error("Usage: floor_workers.ts UPSTREAM_URL N");
    Deno.exit(2);
  }
  await main(upstream, count);
}

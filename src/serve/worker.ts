/**
 * @module One serving worker of `serve --workers N`: a Web Worker that runs the gateway as {@linkcode serve} does,
 * told by its supervisor (workers.ts) when to listen, on which port, and when to stop.
 */
/// <reference lib="deno.worker" />
import { serve } from "./server.ts";
import type { FromSupervisor, ToSupervisor } from "./workers.ts";

const post = (message: ToSupervisor) => self.postMessage(message);

/** Waits for the supervisor's start message, then serves as it directs: listen when told, stop when told. */
function workerMain(): void {
  const listen = Promise.withResolvers<number | undefined>();
  const stopped = Promise.withResolvers<void>();
  self.onmessage = (event: MessageEvent<FromSupervisor>) => {
    const message = event.data;
    if (message.type === "listen") listen.resolve(message.port);
    else if (message.type === "stop") stopped.resolve();
    else void run(message, listen.promise, stopped.promise);
  };
}

/** Runs the gateway as worker `start.index`; tells the supervisor how it ended. */
async function run(
  start: FromSupervisor & { type: "start" },
  listen: Promise<number | undefined>,
  stopped: Promise<void>,
): Promise<void> {
  try {
    const code = await serve(start.flags, {
      err: (text) => console.error(text),
      env: (name) => Deno.env.get(name),
      worker: {
        index: start.index,
        sealerSecret: start.sealerSecret,
        socketMemory: start.socketMemory,
        ready: (needs) => {
          post({ type: "ready", needs });
          return listen;
        },
        listening: (address) => post({ type: "listening", ...address }),
        // A stop that came before the server was up still stops it once it is.
        onStop: (stop) => void stopped.then(stop),
      },
    });
    post({ type: "done", code });
  } catch (err) {
    post({ type: "failed", message: err instanceof Error ? err.message : String(err) });
  }
  // The supervisor ends this worker once it has the message.
}

workerMain();

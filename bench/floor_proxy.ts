/**
 * @module The benchmark's floor: the least any gateway built on this runtime does per request. It reads the
 * request, sends it to the upstream with the runtime's own `fetch` and returns the answer's body as it comes,
 * with no auth, routing, checks or records. Measured beside the gateway in the same run, it shows which part
 * of the cost is the gateway's own and which part is the extra HTTP hop itself.
 */
import { chunkReader } from "../src/relay/body_reader.ts";

/** How the answer's body goes back: untouched (native), or through JS chunk by chunk as any relay that looks at it. */
export interface FloorOptions {
  /**
   * Read each chunk into a reused 2 KiB buffer (a BYOB read, growing when filled), copy it out and enqueue it into a
   * stream of its own: what the gateway's relay does minus its watching, so the gateway's own per-event work is the
   * distance from this variant.
   */
  jsRelay?: boolean;
}

/** The upstream body passed through JS one chunk at a time, through the gateway's own chunk reader. */
function relayInJs(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = chunkReader(body);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** A handler that forwards every request's path, method and body to `upstream` and pipes the answer back. */
export function createFloorProxy(upstream: string, options: FloorOptions = {}): (req: Request) => Promise<Response> {
  return async (req) => {
    const path = req.url.slice(req.url.indexOf("/", "http://".length));
    const res = await fetch(upstream + path, {
      method: req.method,
      headers: { "content-type": req.headers.get("content-type") ?? "application/json" },
      body: await req.bytes(),
    });
    return new Response(options.jsRelay && res.body ? relayInJs(res.body) : res.body, {
      status: res.status,
      headers: { "content-type": res.headers.get("content-type") ?? "application/octet-stream" },
    });
  };
}

if (import.meta.main) {
  const [upstream, flag] = Deno.args;
  if (!upstream || (flag !== undefined && flag !== "--js-relay")) {
    console.error("Usage: floor_proxy.ts UPSTREAM_URL [--js-relay]");
    Deno.exit(2);
  }
  Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(JSON.stringify({ listening: port })) },
    createFloorProxy(upstream, { jsRelay: flag === "--js-relay" }),
  );
}

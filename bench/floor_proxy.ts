/**
 * @module The benchmark's floor: the least any gateway built on this runtime does per request. It reads the
 * request, sends it to the upstream with the runtime's own `fetch` and returns the answer's body as it comes,
 * with no auth, routing, checks or records. Measured beside the gateway in the same run, it shows which part
 * of the cost is the gateway's own and which part is the extra HTTP hop itself.
 */

/** A handler that forwards every request's path, method and body to `upstream` and pipes the answer back. */
export function createFloorProxy(upstream: string): (req: Request) => Promise<Response> {
  return async (req) => {
    const path = req.url.slice(req.url.indexOf("/", "http://".length));
    const res = await fetch(upstream + path, {
      method: req.method,
      headers: { "content-type": req.headers.get("content-type") ?? "application/json" },
      body: await req.bytes(),
    });
    return new Response(res.body, {
      status: res.status,
      headers: { "content-type": res.headers.get("content-type") ?? "application/octet-stream" },
    });
  };
}

if (import.meta.main) {
  const upstream = Deno.args[0];
  if (!upstream) {
    console.error("Usage: floor_proxy.ts UPSTREAM_URL");
    Deno.exit(2);
  }
  Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(JSON.stringify({ listening: port })) },
    createFloorProxy(upstream),
  );
}

/** @module The benchmark's floor proxy: it relays path, body, status and content type, and streams as they come. */
import assert from "node:assert/strict";
import { createFakeUpstream, LONG_EVENTS, LONG_MODEL } from "../../bench/fake_upstream.ts";
import { createFloorProxy, type FloorOptions } from "../../bench/floor_proxy.ts";
import { v8FlagsOf } from "../../bench/setup.ts";
import { readText } from "../_reads.ts";

async function withProxy(
  upstream: (req: Request) => Response | Promise<Response>,
  use: (url: string) => Promise<void>,
  options: FloorOptions = {},
) {
  const up = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, upstream);
  const proxy = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    createFloorProxy(`http://127.0.0.1:${up.addr.port}`, options),
  );
  try {
    await use(`http://127.0.0.1:${proxy.addr.port}`);
  } finally {
    await proxy.shutdown();
    await up.shutdown();
  }
}

Deno.test("floor proxy: relays path, method, body, status and content type", async () => {
  let seen = "";
  await withProxy(async (req) => {
    seen = `${req.method} ${new URL(req.url).pathname}${new URL(req.url).search} ${await req.text()}`;
    return new Response('{"error":"teapot"}', { status: 418, headers: { "content-type": "application/json" } });
  }, async (url) => {
    const res = await fetch(`${url}/v1/chat/completions?x=1`, { method: "POST", body: '{"model":"m"}' });
    assert.equal(res.status, 418);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(await res.text(), '{"error":"teapot"}');
  });
  assert.equal(seen, 'POST /v1/chat/completions?x=1 {"model":"m"}');
});

for (const jsRelay of [false, true]) {
  Deno.test(`floor proxy${jsRelay ? ", bare JS relay variant" : ""}: relays the fake upstream's whole stream`, async () => {
    await withProxy(createFakeUpstream(), async (url) => {
      const res = await fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"model":"${LONG_MODEL}","stream":true}`,
      });
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      const text = await readText(res);
      assert.match(text, /^event: message_start/);
      assert.equal(text.split("\n\n").length - 1, LONG_EVENTS);
      assert.match(text, /event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/);
    }, { jsRelay });
  });
}

Deno.test("v8FlagsOf() finds the V8 flags of a task, so the bench runs the gateway as `deno task start` does", () => {
  assert.deepEqual(v8FlagsOf("deno run --allow-net main.ts serve"), []);
  assert.deepEqual(v8FlagsOf("deno run --v8-flags=--max-semi-space-size=2  --allow-net main.ts serve"), [
    "--v8-flags=--max-semi-space-size=2",
  ]);
});

/** @module The bench's tool loop against a real gateway and the bench's fake upstream, both on 127.0.0.1. */
import assert from "node:assert/strict";
import { createFakeUpstream } from "../../bench/fake_upstream.ts";
import { gatewayConfig } from "../../bench/setup.ts";
import { toolLoop, toolLoopTable } from "../../bench/tool_loop.ts";
import { startGateway } from "../_helpers.ts";

for (const model of ["bench-claude", "bench-codex"]) {
  Deno.test(`toolLoop() runs the loop over a socket, over HTTP and chained: same upstream bytes, far fewer client bytes (${model})`, async () => {
    await using upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, createFakeUpstream());
    const upstreamUrl = `http://127.0.0.1:${upstream.addr.port}`;
    await using gw = await startGateway(upstreamUrl, {
      configYaml: gatewayConfig(upstream.addr.port, ":memory:"),
      env: { BENCH_UPSTREAM_KEY: "bench-key" },
    });
    const { secret } = await gw.store.createToken({ group: "bench" });
    const sides = await toolLoop(
      { gatewayUrl: gw.url, upstreamUrl, token: secret, gatewayPid: Deno.pid, model },
      { turns: 4, loops: 1 },
    );
    const [socket, http, chained] = sides;
    assert.deepEqual(sides.map((s) => s.transport), ["websocket", "http", "chained"]);
    assert.equal(socket.upstreamBytes, http.upstreamBytes, "the upstream gets the whole conversation either way");
    assert.ok(Math.abs(chained.upstreamBytes - http.upstreamBytes) < http.upstreamBytes * 0.2, "chained too");
    assert.ok(socket.clientBytes * 2 < http.clientBytes, `${socket.clientBytes} vs ${http.clientBytes}`);
    assert.ok(chained.clientBytes * 2 < http.clientBytes, `${chained.clientBytes} vs ${http.clientBytes}`);
    assert.equal(gw.exchanges.filter((e) => e.transport === "websocket").length, 4 + 3);
    assert.match(toolLoopTable(sides).join("\n"), new RegExp(`${model} +chained .* KB`));
  });
}

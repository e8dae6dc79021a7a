/** @module The bench's tool loop against a real gateway and the bench's fake upstream, both on 127.0.0.1. */
import assert from "node:assert/strict";
import { createFakeUpstream } from "../../bench/fake_upstream.ts";
import { gatewayConfig } from "../../bench/setup.ts";
import { toolLoop, toolLoopTable } from "../../bench/tool_loop.ts";
import { startGateway } from "../_helpers.ts";

Deno.test("toolLoop() runs the loop over a socket and over HTTP: same upstream bytes, far fewer client bytes", async () => {
  await using upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, createFakeUpstream());
  const upstreamUrl = `http://127.0.0.1:${upstream.addr.port}`;
  await using gw = await startGateway(upstreamUrl, {
    configYaml: gatewayConfig(upstream.addr.port, ":memory:"),
    env: { BENCH_UPSTREAM_KEY: "bench-key" },
  });
  const { secret } = await gw.store.createToken({ group: "bench" });
  const sides = await toolLoop(
    { gatewayUrl: gw.url, upstreamUrl, token: secret, gatewayPid: Deno.pid, model: "bench-claude" },
    { turns: 4, loops: 1 },
  );
  const [socket, http] = sides;
  assert.deepEqual(sides.map((s) => s.transport), ["websocket", "http"]);
  assert.equal(socket.upstreamBytes, http.upstreamBytes, "the upstream gets the whole conversation either way");
  assert.ok(socket.clientBytes * 2 < http.clientBytes, `${socket.clientBytes} vs ${http.clientBytes}`);
  assert.equal(gw.exchanges.filter((e) => e.transport === "websocket").length, 4 + 3);
  assert.match(toolLoopTable(sides).join("\n"), /websocket .* KB/);
});

/**
 * @module SIGTERM with a Responses WebSocket open: the running response finishes, a new one is refused with an error
 * event, the socket then closes with 1001, and the process exits 0 (the runtime's own shutdown would cut it at once).
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream } from "../_fake_upstream.ts";
import { fixture, within } from "../_helpers.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";
import { openSocket } from "../_socket.ts";

Deno.test("SIGTERM lets a socket's running response finish, refuses new ones, then closes it with 1001", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-socket-stop-" });
  await using upstream = fakeUpstream();
  const held = controlledStream();
  upstream.routes.set("POST /up/v1/messages", () => held.response);
  try {
    const configFile = `${dir}/gateway.yaml`;
    // A short grace period: should the socket never close, the process still stops soon after it.
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`) +
      "shutdown_grace_ms: 8000\n";
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-socket-stop" };
    const { token } = await cliToken(dir, configFile, env);
    await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    await using socket = await openSocket(gateway.url, { authorization: `Bearer ${token}` });
    socket.send({ type: "response.create", model: "m1", input: "Hi", store: false });
    await within(waitForRequest(upstream.requests), 5000, "the request reaching the upstream");
    const stopped = gateway.stop();
    // The gateway says when it begins to stop; a create after that is refused.
    await within(waitForLine(gateway.stderr, /modelgate stopping/), 5000, "the stopping line");
    socket.send({ type: "response.create", model: "m1", input: "Again", store: false, stream_id: "late" });
    const refused = await socket.next();
    assert.equal((refused.error as { code: string }).code, "server_shutting_down");
    held.send(fixture("anthropic/text.sse"));
    held.end();
    const events = await socket.until("response.completed");
    assert.equal(events.at(-1)!.type, "response.completed");
    assert.deepEqual(await socket.closed, { code: 1001, reason: "gateway stopping" });
    // Once its last socket has closed, the gateway stops at once rather than at the end of its grace period.
    assert.equal(await within(stopped, 4000, "the process exiting after its last socket closed"), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function waitForRequest(requests: unknown[]): Promise<void> {
  while (requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
}

async function waitForLine(lines: string[], pattern: RegExp): Promise<void> {
  while (!lines.some((line) => pattern.test(line))) await new Promise((resolve) => setTimeout(resolve, 10));
}

/**
 * @module SIGTERM with a Responses WebSocket open: the running response finishes, a new one is refused with an error
 * event, the socket then closes with 1001, and the process exits 0 (the runtime's own shutdown would cut it at once).
 * At the end of the grace period a response still running gets an error event before its socket closes, and a client
 * that reads nothing does not keep the process from exiting.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream } from "../_fake_upstream.ts";
import { fixture, within } from "../_helpers.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";
import { openSocket } from "../_socket.ts";
import { clientFrame, openRawSocket, type RawSocket } from "../../bench/raw_socket.ts";

/** The grace period of the cut: short, so the test sees its end soon. */
const GRACE_MS = 1500;

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

async function waitForRequest(requests: unknown[], count = 1): Promise<void> {
  while (requests.length < count) await new Promise((resolve) => setTimeout(resolve, 10));
}

async function waitForLine(lines: string[], pattern: RegExp): Promise<void> {
  while (!lines.some((line) => pattern.test(line))) await new Promise((resolve) => setTimeout(resolve, 10));
}

Deno.test("SIGTERM: at the end of the grace period a cut response gets an error event, and a client that reads nothing does not hold the exit", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-socket-cut-" });
  await using upstream = fakeUpstream();
  const reading = controlledStream();
  const stalled = controlledStream();
  upstream.routes.set(
    "POST /up/v1/messages",
    (seen) => JSON.stringify(seen.body).includes("stall") ? stalled.response : reading.response,
  );
  let raw: RawSocket | undefined;
  try {
    const configFile = `${dir}/gateway.yaml`;
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`) +
      `shutdown_grace_ms: ${GRACE_MS}\n`;
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-socket-cut" };
    const { token } = await cliToken(dir, configFile, env);
    await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    // Should the process not exit when it must, the test still ends: it is killed by its id.
    let exited = false;
    using _killed = { [Symbol.dispose]: () => exited || kill(gateway.pid) };
    await using socket = await openSocket(gateway.url, { authorization: `Bearer ${token}` });
    socket.send({ type: "response.create", model: "m1", input: "Hi", store: false, stream_id: "s1" });
    // A client that sends and then reads nothing, while its answer is many times what the buffers on the way hold.
    raw = await openRawSocket(gateway.url, { authorization: `Bearer ${token}` });
    await raw.write(
      clientFrame(JSON.stringify({ type: "response.create", model: "m1", input: "stall", store: false })),
    );
    await within(waitForRequest(upstream.requests, 2), 5000, "both requests reaching the upstream");
    const opening = fixture("anthropic/text.sse").split("\n\n").slice(0, 2).join("\n\n") + "\n\n";
    reading.send(opening);
    stalled.send(opening);
    const delta = `event: content_block_delta\ndata: ${
      JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "z".repeat(16384) } })
    }\n\n`;
    for (let i = 0; i < 1024; i++) stalled.send(delta);
    assert.equal((await socket.next()).type, "response.created");
    const started = performance.now();
    const stopped = gateway.stop();
    void stopped.then(() => exited = true);
    const events = await socket.until("error");
    const error = events.at(-1)!;
    assert.deepEqual([error.stream_id, (error.error as { code: string }).code], ["s1", "server_shutting_down"]);
    assert.match((error.error as { message: string }).message, /stopped before this response finished/);
    assert.deepEqual(await socket.closed, { code: 1001, reason: "gateway stopping" });
    // The grace period is a bound: the process stops soon after it, though one client still holds its socket.
    assert.equal(await within(stopped, GRACE_MS + 8000, "the process exiting after its grace period"), 0);
    const took = performance.now() - started;
    assert.ok(took >= GRACE_MS, `stopped after ${took} ms, before the grace period's end`);
  } finally {
    raw?.close();
    reading.end();
    stalled.end();
    await Deno.remove(dir, { recursive: true });
  }
});

/** Kills a process of the test's own that has not exited. */
function kill(pid: number): void {
  try {
    Deno.kill(pid, "SIGKILL");
  } catch {
    // It exited meanwhile.
  }
}

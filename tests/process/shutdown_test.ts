/**
 * @module SIGTERM with clients on keep-alive connections: an idle connection is closed cleanly at once, and a request
 * in flight is answered in full with `connection: close`, so no client sends another request on a closing socket; its
 * usage, batched in memory, is in the request log after the exit, found by each indexed filter.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, within } from "../_helpers.ts";
import { requestLog } from "../../src/usage/query.ts";
import { denoMain, processConfigYaml, runCommand, startProcess } from "../_process.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Reads one HTTP/1.1 response with a content-length body, or "closed" when the server closes the socket first. */
async function readResponse(conn: Deno.Conn): Promise<{ head: string; body: string } | "closed"> {
  let text = "";
  const buffer = new Uint8Array(16384);
  for (;;) {
    const end = text.indexOf("\r\n\r\n");
    if (end !== -1) {
      const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (text.length >= end + 4 + length) return { head: text.slice(0, end), body: text.slice(end + 4) };
    }
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) return "closed";
    text += decoder.decode(buffer.subarray(0, n));
  }
}

Deno.test("SIGTERM closes idle keep-alive connections cleanly and answers in-flight requests with connection: close", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-shutdown-" });
  await using upstream = fakeUpstream();
  const answer = Promise.withResolvers<void>();
  upstream.routes.set("POST /up/v1/messages", async () => {
    await answer.promise;
    return jsonReply(anthropicMessage());
  });
  const conns: Deno.Conn[] = [];
  try {
    const configFile = `${dir}/gateway.yaml`;
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`);
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-shutdown" };
    const created = await runCommand(
      denoMain(dir, "token", "create", "--group", "default", "--config", configFile),
      env,
    );
    const token = created.stdout.trim();
    await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    const { port } = new URL(gateway.url);
    const connect = async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
      conns.push(conn);
      return conn;
    };

    const idle = await connect();
    await idle.write(encoder.encode(`GET /v1/models HTTP/1.1\r\nhost: x\r\nx-api-key: ${token}\r\n\r\n`));
    const listed = await within(readResponse(idle), 5000, "the models listing");
    assert.ok(listed !== "closed" && /^HTTP\/1.1 200/.test(listed.head));
    assert.ok(!/connection: close/i.test(listed.head), "before SIGTERM the connection stays open");

    const busy = await connect();
    const body = JSON.stringify(messagesBody({ model: "m1" }));
    await busy.write(encoder.encode(
      `POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: ${token}\r\ncontent-type: application/json\r\n` +
        `content-length: ${encoder.encode(body).length}\r\n\r\n${body}`,
    ));
    await within(
      (async () => {
        while (upstream.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      })(),
      5000,
      "the request reaching the upstream",
    );

    // SIGTERM now; the exit is awaited at the end (a second SIGTERM during the gateway's own cleanup would kill it).
    let exited = false;
    const stopped = gateway.stop().finally(() => exited = true);
    assert.equal(await within(readResponse(idle), 5000, "the idle connection's close"), "closed");
    answer.resolve();
    const answered = await within(readResponse(busy), 5000, "the in-flight answer");
    assert.ok(answered !== "closed", "the in-flight request was answered");
    assert.match(answered.head, /^HTTP\/1.1 200/);
    assert.match(answered.head, /connection: close/i);
    assert.equal(JSON.parse(answered.body).content[0].text, "Hello");
    assert.equal(await within(readResponse(busy), 5000, "the busy connection's close"), "closed");
    // A supervisor that repeats its SIGTERM while the gateway writes its last usage does not cut that short.
    // Only while the child is not yet reaped: its pid is still its own.
    if (!exited) Deno.kill(gateway.pid, "SIGTERM");
    assert.equal(await stopped, 0);
    // The request's log entry and its index keys, batched in memory, were written on the way out.
    using kv = await Deno.openKv(`${dir}/gateway.kv`);
    for (const filter of [{ model: "m1" }, { status: 200 }, {}]) {
      const found = await requestLog(kv, { ...filter, limit: 10 });
      assert.deepEqual(
        found.map((entry) => [entry.route, entry.status]),
        [["/v1/messages", 200]],
        JSON.stringify(filter),
      );
    }
  } finally {
    for (const conn of conns) {
      try {
        conn.close();
      } catch {
        // Already closed.
      }
    }
    await Deno.remove(dir, { recursive: true });
  }
});

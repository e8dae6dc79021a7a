/**
 * @module A gateway with OTEL_DENO=true stops in time whatever its collector does: one that takes every export and
 * never answers, or one that is gone. Its process ends with code 0, within the bound docs/operating.md gives
 * ("Stopping"), on its own rather than by being ended for something that still held it.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, readText, within } from "../_helpers.ts";
import { otlpEnv } from "../_otlp_receiver.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";

/** How long each of the runtime's exports waits for the collector (OTEL_EXPORTER_OTLP_TIMEOUT). */
const EXPORT_TIMEOUT_MS = 1000;
/**
 * The runtime's last exports (spans, logs, metrics, each behind one already under way) wait at most six export
 * timeouts between them; the rest is headroom for a loaded machine, well below the test rig's own 30 s.
 */
const EXIT_BOUND_MS = 6 * EXPORT_TIMEOUT_MS + 10_000;

/** A collector on 127.0.0.1 that takes every connection and what is sent on it, and never answers. */
function silentCollector() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const taken = Promise.withResolvers<void>();
  const drain = async (conn: Deno.Conn) => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (await conn.read(buffer) !== null) taken.resolve();
    } catch {
      // Closed at the end of the test.
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      void drain(conn);
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${listener.addr.port}`,
    /** Resolves once an export has come in. */
    taken: taken.promise,
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const conn of conns) conn.close();
      await accepting;
    },
  };
}

/** The base URL of a collector that is gone: a port just freed, which refuses connections. */
function goneCollector(): string {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${listener.addr.port}`;
  listener.close();
  return url;
}

async function servedThenStopped(collectorUrl: string, exported?: Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-tracing-stop-" });
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage()));
  try {
    const configFile = `${dir}/gateway.yaml`;
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`);
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-tracing-stop" };
    const { token } = await cliToken(dir, configFile, env);
    const telemetry = { ...otlpEnv({ url: collectorUrl }), OTEL_EXPORTER_OTLP_TIMEOUT: String(EXPORT_TIMEOUT_MS) };
    await using gateway = await startProcess({
      command: denoMain(dir, "serve", "--config", configFile),
      env: { ...env, ...telemetry },
    });
    const res = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify({ model: "m1", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
    });
    assert.equal(res.status, 200, await readText(res));
    // Spans, metrics and log lines are on their way (and, to a silent collector, stuck) when the stop comes.
    if (exported) await within(exported, 10_000, "an export reaching the collector");
    const code = await within(gateway.stop(), EXIT_BOUND_MS, "the gateway's exit");
    assert.equal(code, 0, gateway.stderr.join("\n"));
    const held = gateway.stderr.find((line) => line.includes("still held the process"));
    assert.equal(held, undefined, "the process ended on its own, not by being ended");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("with tracing on, a gateway stops in time though its collector takes exports and never answers", async () => {
  await using collector = silentCollector();
  await servedThenStopped(collector.url, collector.taken);
});

Deno.test("with tracing on, a gateway stops in time though its collector is gone", async () => {
  await servedThenStopped(goneCollector());
});

/**
 * @module Where `serve` listens, as a real process: a port another program holds ends the start at once with exit 1,
 * naming the address and what to do; `--port` and `--host` (and MODELGATE_PORT) choose the address without an edit to
 * the config.
 */
import assert from "node:assert/strict";
import { within } from "../_reads.ts";
import { denoMain, processConfigYaml, runCommand, startProcess } from "../_process.ts";

/** A port that was free a moment ago. */
function freePort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = probe.addr as Deno.NetAddr;
  probe.close();
  return port;
}

async function withConfig(run: (dir: string, config: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-listen-" });
  try {
    await Deno.writeTextFile(`${dir}/gateway.yaml`, processConfigYaml(`${dir}/gate.kv`));
    await run(dir, `${dir}/gateway.yaml`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a gateway whose port is taken exits 1 at once, naming the address and what to do", async () => {
  await withConfig(async (dir, config) => {
    using holder = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = holder.addr as Deno.NetAddr;
    // The deadline only keeps a regression from hanging the suite; the start ends long before it.
    const refused = await within(
      runCommand(denoMain(dir, "serve", "--config", config, "--port", String(port)), {}, 60_000),
      60_000,
      "the refused start",
    );
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, new RegExp(`Cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
    assert.match(refused.stderr, /--port N/);
    assert.doesNotMatch(refused.stderr, /listening on/);
  });
});

Deno.test("--port and --host choose the address over MODELGATE_PORT and the config; MODELGATE_PORT over the config", async () => {
  await withConfig(async (dir, config) => {
    const [flagPort, envPort] = [freePort(), freePort()];
    const env = { MODELGATE_PORT: String(envPort) };
    {
      const command = denoMain(dir, "serve", "--config", config, "--port", String(flagPort), "--host", "127.0.0.1");
      await using gw = await startProcess({ command, env });
      assert.equal(gw.url, `http://127.0.0.1:${flagPort}`);
      const health = await fetch(`${gw.url}/healthz`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
    }
    await using gw = await startProcess({ command: denoMain(dir, "serve", "--config", config), env });
    assert.equal(gw.url, `http://127.0.0.1:${envPort}`);
    const bad = await runCommand(denoMain(dir, "serve", "--config", config, "--port", "http"), {}, 60_000);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /Cannot listen on port "http" \(from --port\): give a whole number from 0 to 65535/);
  });
});

/** @module The KV file holds token hashes and usage: after `serve` starts it and its companions are 0600. */
import assert from "node:assert/strict";
import { denoMain, processConfigYaml, startProcess } from "../_process.ts";
import { readText } from "../_reads.ts";

async function modeOf(file: string): Promise<string> {
  return ((await Deno.stat(file)).mode! & 0o777).toString(8);
}

/**
 * Waits for an answer before the test stops the gateway: a SIGTERM sent the instant the listen line appears can come
 * before the runtime has the gateway's signal listener in place, and then ends the process as SIGTERM does by default.
 */
async function answering(url: string): Promise<void> {
  await readText(await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(15_000) }));
}

Deno.test({
  name: "serve creates the KV file readable by its owner only, and tightens an existing one with a log line",
  ignore: Deno.build.os === "windows",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "modelgate-kv-mode-" });
    try {
      const kvPath = `${dir}/data/gateway.kv`;
      const configFile = `${dir}/gateway.yaml`;
      await Deno.writeTextFile(configFile, processConfigYaml(kvPath));
      const env = { TEST_UP_KEY: "upstream-key-for-kv-mode" };
      {
        await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
        for (const file of [kvPath, `${kvPath}-wal`, `${kvPath}-shm`]) assert.equal(await modeOf(file), "600", file);
        await answering(gateway.url);
        assert.equal(await gateway.stop(), 0);
      }
      await Deno.chmod(kvPath, 0o644);
      await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
      for (const file of [kvPath, `${kvPath}-wal`, `${kvPath}-shm`]) assert.equal(await modeOf(file), "600", file);
      await answering(gateway.url);
      assert.equal(await gateway.stop(), 0);
      const line = gateway.stdout.map((text) => JSON.parse(text)).find((l) => l.event === "kv_file_mode_tightened");
      assert.deepEqual([line?.file, line?.from, line?.to], [kvPath, "0644", "0600"]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

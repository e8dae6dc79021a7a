/**
 * @module One Responses socket flooding a gateway process with tiny malformed messages (each earns an error event),
 * from a client that never reads and from one that reads everything (bench/socket_flood.ts, the same flood the bench
 * measures): other clients' `/healthz` stays within a second, and the gateway's memory comes back once the client
 * has gone. Loopback only; bounded by the flood's own deadlines.
 */
import assert from "node:assert/strict";
import { floodLine, floodOnce } from "../../bench/socket_flood.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";

Deno.test("a socket flooding tiny messages, read or not, holds neither the event loop nor the memory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-socket-flood-" });
  try {
    const configFile = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(configFile, processConfigYaml(`${dir}/gateway.kv`));
    const env = { TEST_UP_KEY: "upstream-key-for-socket-flood" };
    const { token } = await cliToken(dir, configFile, env);
    await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    for (const [reading, messages] of [[false, 300_000], [true, 100_000]] as const) {
      const result = await floodOnce({ url: gateway.url, pid: gateway.pid, token }, { messages, settleS: 20, reading });
      const figures = floodLine(result);
      assert.ok(result.healthMaxMs < 1000, `other clients waited: ${figures}`);
      assert.equal(result.healthFailures, 0, figures);
      assert.ok(result.backWithinS !== undefined, `the memory did not come back: ${figures}`);
      // The gateway ends the socket (too many messages too fast) rather than answering all of them.
      if (reading) assert.ok(result.endedByGateway, figures);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

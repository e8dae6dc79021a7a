/**
 * @module `deno task compile`'s command builds one executable that starts with a config and answers /healthz.
 * `deno compile` downloads its runtime base (denort) unless DENORT_BIN names one, so the test runs where that
 * download works or a base is at hand, when MODELGATE_TEST_COMPILE=1.
 */
import assert from "node:assert/strict";
import { optIn, processConfigYaml, ROOT, runCommand, startProcess } from "../_process.ts";

/** The `compile` task's command line, with the output moved to `output`. */
async function compileCommand(output: string): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks as Record<string, string>;
  const words = tasks.compile.split(/\s+/);
  assert.equal(words[0], "deno");
  const at = words.indexOf("--output");
  words.splice(at, 2, "--output", output);
  return [Deno.execPath(), ...words.slice(1)];
}

Deno.test({
  ...optIn(
    "deno task compile builds a single executable that serves /healthz with a config file",
    "MODELGATE_TEST_COMPILE",
    "1 (it downloads the runtime base unless DENORT_BIN names one)",
    (value) => value === "1",
  ),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "modelgate-compile-" });
    try {
      const binary = `${dir}/modelgate`;
      const built = await runCommand(await compileCommand(binary), { ...Deno.env.toObject() });
      assert.equal(built.code, 0, built.stderr);
      const configFile = `${dir}/gateway.yaml`;
      await Deno.writeTextFile(configFile, processConfigYaml());
      await using gateway = await startProcess({
        command: [binary, "serve", "--config", configFile],
        env: { TEST_UP_KEY: "upstream-key-compiled", MODELGATE_ADMIN_KEY: "compiled-admin-key-0123456789-abcdef" },
      });
      const res = await fetch(`${gateway.url}/healthz`);
      assert.equal(res.status, 200);
      assert.equal((await res.json()).status, "ok");
      // The console's style sheet is inside the binary.
      const style = await fetch(`${gateway.url}/ui/assets/console.css`);
      assert.equal(style.status, 200);
      assert.match(await style.text(), /figure\.chart/);
      assert.equal(await gateway.stop(), 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

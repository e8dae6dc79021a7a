/**
 * @module `deno task install:cli`'s command installs a `modelgate` command (here under a temporary root) that a
 * person runs from anywhere: its help lists the person's commands and `run` may start a program.
 */
import assert from "node:assert/strict";
import { writeCredentials } from "../../src/cli/credentials.ts";
import { ROOT, runCommand } from "../_process.ts";

/** The install:cli task's command line, installing under `root`. */
async function installCommand(root: string): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks as Record<string, string>;
  const words = tasks["install:cli"].split(/\s+/);
  assert.deepEqual(words.slice(0, 2), ["deno", "install"]);
  return [Deno.execPath(), "install", "--root", root, ...words.slice(2)];
}

Deno.test("deno task install:cli installs a modelgate command whose run starts the given program", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate_install_" });
  try {
    const bin = Deno.execPath().replace(/\/[^/]*$/, "");
    const env = { ...Deno.env.toObject(), PATH: `${bin}:${Deno.env.get("PATH") ?? ""}`, XDG_CONFIG_HOME: dir };
    const installed = await runCommand(await installCommand(`${dir}/root`), env, 120_000);
    assert.equal(installed.code, 0, installed.stderr);
    const modelgate = `${dir}/root/bin/modelgate`;

    const help = await runCommand([modelgate, "--help"], env, 60_000);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /login --gateway URL/);

    await writeCredentials(`${dir}/modelgate/credentials.json`, {
      gateway: "http://127.0.0.1:9",
      token: "sk-installed",
      token_id: "tok_installed",
      owner: "ada@example.com",
      group: "default",
      expires_at: null,
    });
    const run = await runCommand([modelgate, "run", "--", Deno.execPath(), "eval", "Deno.exit(4)"], env, 60_000);
    assert.equal(run.code, 4, run.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

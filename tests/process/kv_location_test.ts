/**
 * @module The KV anywhere: the real `deno task start` and `deno task cli` work with a KV file outside the checkout (as
 * the docs show for several instances on one host), and a KV location the process may not write stops `serve` and the
 * CLI at start with the gateway's own message saying what to change.
 */
import assert from "node:assert/strict";
import { within } from "../_reads.ts";
import { denoMain, processConfigYaml, ROOT, runCommand, startProcess } from "../_process.ts";

/** `text` matched literally inside a RegExp. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `deno task NAME ARGS...`, run in the checkout as a user runs it. */
function denoTask(name: string, ...args: string[]): string[] {
  return [Deno.execPath(), "task", name, ...args];
}

Deno.test("deno task cli and deno task start work with a KV file in a folder outside the checkout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-kv-" });
  try {
    assert.ok(!dir.startsWith(ROOT), "the folder is outside the checkout");
    // Neither the folder nor the file exists yet: the first command creates them.
    const kvPath = `${dir}/state/shared.kv`;
    const config = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(config, processConfigYaml(kvPath));
    const env = { TEST_UP_KEY: "upstream-key-for-kv-test" };
    const created = await runCommand(denoTask("cli", "token", "create", "--group", "default", "--config", config), env);
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    assert.match(token, /^sk-/);
    // The gateway finds the token through MODELGATE_KV, the other way to name the file.
    await using gw = await startProcess({
      command: denoTask("start", "--config", config),
      env: { ...env, MODELGATE_KV: kvPath },
    });
    const res = await fetch(`${gw.url}/v1/models`, { headers: { "x-api-key": token } });
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).data.map((m: { id: string }) => m.id), ["m1"]);
    assert.equal(await gw.stop(), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a KV location the process may not write stops serve and the CLI at start, saying what to change", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-kv-" });
  try {
    const config = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(config, processConfigYaml(`${dir}/state/gate.kv`));
    const env = { TEST_UP_KEY: "upstream-key-for-kv-test" };
    // A deno run command whose --allow-write reaches elsewhere only (the tasks' flag once was --allow-write=data).
    const elsewhere = `${dir}/other`;
    const [kv, state, file] = [`${dir}/state/gate.kv`, `${dir}/state`, config].map(literal);
    for (const words of [["serve"], ["token", "list"], ["group", "list"], ["usage"]]) {
      const run = await within(
        runCommand(denoMain(elsewhere, ...words, "--config", config), env),
        30_000,
        "the command",
      );
      assert.equal(run.code, 1, words.join(" "));
      assert.match(
        run.stderr,
        new RegExp(
          `^Cannot open KV "${kv}" \\(kv_path in ${file}\\): this process may not write to "${state}" ` +
            `.*\`deno task start\` or \`deno task cli\`.*--allow-write=${state} .*set kv_path`,
          "m",
        ),
        words.join(" "),
      );
      assert.ok(!run.stderr.includes("run again with the --allow-write flag"), "Deno's own message is shown");
    }
    // Through the real task: a folder that cannot be one, because a file has its name.
    await Deno.writeTextFile(`${dir}/taken`, "");
    const taken = await within(
      runCommand(denoTask("start", "--config", config), { ...env, MODELGATE_KV: `${dir}/taken/gate.kv` }),
      30_000,
      "the start",
    );
    assert.equal(taken.code, 1);
    const [takenKv, takenDir] = [`${dir}/taken/gate.kv`, `${dir}/taken`].map(literal);
    assert.match(
      taken.stderr,
      new RegExp(`Cannot open KV "${takenKv}" \\(from \\$MODELGATE_KV\\): "${takenDir}" is not a folder`),
    );
    assert.match(taken.stderr, /set MODELGATE_KV to a file in a folder it may write/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("once its KV is open the process can write no file, and the KV still takes writes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-kv-" });
  try {
    const script = `${dir}/probe.ts`;
    const runtime = new URL("../../src/serve/runtime.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { dropWritePermission, openKvStore } from "${runtime}";
const store = await openKvStore("${dir}/kv/probe.kv", "probe", { env: () => undefined, onKvOpen: dropWritePermission });
await store.putGroup({ name: "g", listing: "anthropic", models: [] });
let wrote = "wrote";
try {
  Deno.writeTextFileSync("${dir}/escape.txt", "x");
} catch (err) {
  wrote = (err as Error).name;
}
console.log(JSON.stringify({ group: (await store.getGroup("g"))?.name, file: wrote }));
store.close();
`,
    );
    const run = await within(
      runCommand([Deno.execPath(), "run", "--config", `${ROOT}deno.json`, "--allow-read", "--allow-write", script], {}),
      30_000,
      "the probe",
    );
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { group: "g", file: "NotCapable" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * @module The CLI's tasks may start programs (for `modelgate run`), but a command that opens the KV gives that up,
 * as main.ts does once its KV is open: afterwards the process can start no program.
 */
import assert from "node:assert/strict";
import { within } from "../_reads.ts";
import { ROOT, runCommand } from "../_process.ts";

Deno.test("after dropRunPermission a process started with --allow-run can start no program", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-run-" });
  try {
    const script = `${dir}/probe.ts`;
    await Deno.writeTextFile(
      script,
      `import { dropRunPermission } from "${new URL("../../src/serve/runtime.ts", import.meta.url).href}";
const outcome = (): string => {
  try {
    new Deno.Command(Deno.execPath(), { args: ["--version"], stdout: "null" }).outputSync();
    return "ran";
  } catch (err) {
    return (err as Error).name;
  }
};
const before = outcome();
dropRunPermission();
console.log(JSON.stringify({ before, after: outcome() }));
`,
    );
    const command = [Deno.execPath(), "run", "--config", `${ROOT}deno.json`, "--allow-read", "--allow-run", script];
    const run = await within(runCommand(command, {}), 30_000, "the probe");
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { before: "ran", after: "NotCapable" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

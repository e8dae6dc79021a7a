/** @module `.ci/limit`, which `.ci/run` puts the tests under: a run past its limit is stopped and named. */
import assert from "node:assert/strict";
import { within } from "../_reads.ts";
import { runCommand } from "../_process.ts";

Deno.test(".ci/limit stops a command that runs past its limit and names it", async () => {
  const run = await within(
    runCommand(["bash", ".ci/limit", "1", "a sleepy step", "sleep", "30"], {}),
    20_000,
    "the limited command stopping",
  );
  assert.equal(run.code, 124);
  assert.match(run.stderr, /^FAILED: a sleepy step ran past its overall limit of 1 s and was stopped$/m);
});

Deno.test(".ci/limit passes on the exit code of a command that ends in time", async () => {
  for (const code of [0, 3]) {
    const run = await within(
      runCommand(["bash", ".ci/limit", "30", "quick", "bash", "-c", `exit ${code}`], {}),
      20_000,
      "the command",
    );
    assert.equal(run.code, code);
    assert.equal(run.stderr, "");
  }
});

/**
 * @module A usage batch larger than one function call takes arguments is kept, not thrown: run in a process whose
 * call stack is made small, so a batch of a few thousand entries stands for the hundred thousand of a real one.
 */
import assert from "node:assert/strict";
import { within } from "../_reads.ts";
import { ROOT, runCommand } from "../_process.ts";

Deno.test("the usage recorder keeps a batch longer than the call stack allows arguments when the store refuses it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-batch-" });
  try {
    const script = `${dir}/batch.ts`;
    const src = (path: string) => new URL(`../../${path}`, import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { createKvWriter } from "${src("src/core/kv_write.ts")}";
import { usageRecorder } from "${src("src/usage/recorder.ts")}";
import { flakyKv } from "${src("tests/_flaky_kv.ts")}";
const kv = await Deno.openKv(":memory:");
flakyKv(kv).busy = true;
const lines = [];
const recorder = usageRecorder(kv, {
  flushMs: 60_000,
  logDays: 30,
  log: (line) => lines.push(line),
  writes: createKvWriter({ log: () => {}, busyTries: 1 }),
});
const usage = { input_tokens: 1, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
for (let i = 0; i < 30_000; i++) {
  recorder.finish({
    request_id: "req_" + i, started_at: 1_700_000_000_000 + i, method: "POST", route: "/v1/messages",
    protocol: "anthropic", token_id: "tok_1", group: "g", model: "m", stream: false, attempts: [], status: 200,
    usage, usage_complete: true,
  });
}
await recorder.flush();
await recorder.close();
kv.close();
console.log(JSON.stringify(lines.map((line) => [line.event, line.entries])));
`,
    );
    const run = await within(
      runCommand([Deno.execPath(), "run", "--config", `${ROOT}deno.json`, "--v8-flags=--stack-size=100", script], {}),
      30_000,
      "the batch script",
    );
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), [
      ["usage_flush_deferred", 30_000],
      ["usage_unflushed_at_exit", 30_000],
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

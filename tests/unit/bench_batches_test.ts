/** @module The flags of `deno task bench:batches`: the batch's size and the concurrency it runs at. */
import assert from "node:assert/strict";
import { parseBatchArgs } from "../../bench/batches.ts";

Deno.test("bench:batches reads --count and --concurrency, and refuses what it cannot run", () => {
  assert.deepEqual(parseBatchArgs([]), { count: 1000, concurrency: 8 });
  assert.deepEqual(parseBatchArgs(["--count", "50", "--concurrency", "16"]), { count: 50, concurrency: 16 });
  assert.equal(parseBatchArgs(["--help"]), undefined);
  for (const bad of [["--concurrency", "0"], ["--concurrency", "257"], ["--count", "x"], ["--size", "3"]]) {
    assert.throws(() => parseBatchArgs(bad), /Cannot read/, bad.join(" "));
  }
});

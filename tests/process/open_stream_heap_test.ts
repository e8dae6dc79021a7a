/**
 * @module An open stream holds no request body: once the upstream has answered, the stream keeps only what it needs,
 * so a client's large prompt is not held for as long as its answer streams.
 */
import assert from "node:assert/strict";
import { measuringChild } from "../_process.ts";

Deno.test("open streams do not keep their requests' bodies in the heap", async () => {
  // The child measures the heap after a forced collection, which needs the collector exposed to it.
  const { grownPerStream, promptBytes } = await measuringChild(new URL("./_open_stream_heap.ts", import.meta.url)) as {
    grownPerStream: number;
    promptBytes: number;
  };
  assert.ok(
    grownPerStream < promptBytes / 2,
    `each open stream grew the heap by ${grownPerStream} bytes for a prompt of ${promptBytes}`,
  );
});

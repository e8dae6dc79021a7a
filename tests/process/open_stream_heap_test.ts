/**
 * @module An open stream holds no request body: once the upstream has answered, the stream keeps only what it needs,
 * so a client's large prompt is not held for as long as its answer streams.
 */
import assert from "node:assert/strict";

Deno.test("open streams do not keep their requests' bodies in the heap", async () => {
  // The child measures the heap after a forced collection, which needs the collector exposed to it.
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--expose-gc",
      "--allow-net=127.0.0.1",
      "--allow-env",
      "--allow-read",
      new URL("./_open_stream_heap.ts", import.meta.url).pathname,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  });
  const output = await child.output();
  const stdout = new TextDecoder().decode(output.stdout);
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const { grownPerStream, promptBytes } = JSON.parse(stdout.trim().split("\n").at(-1)!);
  assert.ok(
    grownPerStream < promptBytes / 2,
    `each open stream grew the heap by ${grownPerStream} bytes for a prompt of ${promptBytes}`,
  );
});

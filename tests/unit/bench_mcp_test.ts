/** @module The MCP bench's pure parts: its wrk script (an id of its own per call) and its flags. */
import assert from "node:assert/strict";
import { mcpWrkScript } from "../../bench/mcp.ts";
import { parseMcpArgs } from "../../bench/mcp_main.ts";

Deno.test("mcpWrkScript() sends each call with an id of its own, the session's headers, and prints the summary", () => {
  const script = mcpWrkScript("bench_echo", { "mcp-session-id": "s-1", authorization: "Bearer sk-x" });
  assert.match(script, /wrk\.headers\[ \[\[mcp-session-id\]\] \] = \[\[s-1\]\]/);
  assert.match(script, /n = n \+ 1/);
  assert.match(
    script,
    /\[\[\{"jsonrpc":"2\.0","id":\]\] \.\. n \.\. \[\[,"method":"tools\/call","params":\{"name":"bench_echo"/,
  );
  assert.match(script, /BENCH_RESULT/);
});

Deno.test("parseMcpArgs() reads its flags and names a bad one", () => {
  assert.deepEqual(parseMcpArgs([]), { seconds: 10, repeats: 3, warmup: 2, pin: true });
  assert.deepEqual(parseMcpArgs(["--seconds", "2", "--repeats", "1", "--warmup", "0", "--no-pin"]), {
    seconds: 2,
    repeats: 1,
    warmup: 0,
    pin: false,
  });
  assert.equal(parseMcpArgs(["--help"]), undefined);
  assert.throws(() => parseMcpArgs(["--seconds", "0"]), /Cannot read "--seconds 0"/);
  assert.throws(() => parseMcpArgs(["--what"]), /Cannot read "--what/);
});

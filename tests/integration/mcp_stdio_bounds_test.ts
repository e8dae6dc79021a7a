/**
 * @module A stdio server's bounds: one that exits before its handshake is restarted with the backoff counted from its
 * last start (one exit line per start), a call during the backoff does not start it, a line one byte over
 * `max_answer_bytes` is refused while one of exactly that many is taken, and what it prints on stderr is logged at
 * debug only.
 */
import assert from "node:assert/strict";
import { connectMcp, mcpEnv, startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { eventually, gatewayFor, rogueStdioCommand } from "../_mcp_rogue.ts";

/** A stdio server entry of the rogue server in `mode`, with what Deno needs to run it. */
function rogue(name: string, mode: Parameters<typeof rogueStdioCommand>[0], extra = "") {
  return `  - name: ${name}
    command: ${JSON.stringify(rogueStdioCommand(mode))}
    env: { HOME: HOME, DENO_DIR: DENO_DIR, ROGUE_SECRET: ROGUE_SECRET }
    list_timeout_ms: 20000${extra}`;
}

const ENV = { ...mcpEnv(), ROGUE_SECRET: "rogue-stderr-secret-0123456789" };

Deno.test("a stdio server that exits before its handshake is restarted after 0, 1 and 2 s, one exit line a start", async () => {
  await using rig = await gatewayFor(rogue("dies", "exit"), { env: ENV });
  const client = await connectMcp(rig.gateway.url, rig.token);
  assert.deepEqual((await client.listTools()).tools, []);
  const exits = () => rig.gateway.logs.filter((line) => line.event === "mcp_server_exited");
  await eventually("three exits", () => exits().length >= 3 || undefined);
  assert.deepEqual(exits().slice(0, 3).map((line) => line.restart_in_ms), [0, 1000, 2000]);
  const view = rig.gateway.deps.mcp.views().find((view) => view.name === "dies")!;
  assert.equal(exits().length, view.process!.restarts + 1, "one exit line for each start");
  assert.equal(view.process?.state, "down");
  await client.close();
});

Deno.test("a call while a stdio server waits out its restart gets the wait, and does not start it", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const process = () => mcp.gateway.deps.mcp.views().find((view) => view.name === "local")!.process!;
  await client.callTool({ name: "local_pid", arguments: {} });
  // The first exit is restarted at once, the second after 1 s.
  await client.callTool({ name: "local_exit", arguments: {} }).catch(() => {});
  await eventually("the restart at once", () => process().state === "up" || undefined);
  await client.callTool({ name: "local_exit", arguments: {} }).catch(() => {});
  const waiting = process();
  assert.equal(waiting.state, "down");
  assert.equal(waiting.retry_at! - waiting.since!, 1000);
  const err = await client.callTool({ name: "local_pid", arguments: {} }).catch((err) => err);
  assert.match(String(err?.message), /MCP server "local" is unavailable: it is restarted in 1 s/);
  assert.deepEqual([process().state, process().restarts], ["down", waiting.restarts]);
});

Deno.test("a stdio line of max_answer_bytes is taken, and one a byte longer refused", async () => {
  await using rig = await gatewayFor(rogue("lines", "lines", "\n    max_answer_bytes: 4096"), { env: ENV });
  const client = await connectMcp(rig.gateway.url, rig.token);
  const line = (bytes: number) => client.callTool({ name: "lines_line", arguments: { bytes } });
  assert.ok(textOf(await line(4096)).length > 4000);
  const err = await line(4097).catch((err) => err);
  assert.match(String(err?.message), /The answer of MCP server "lines" is larger than its limit of 4096 bytes/);
  assert.ok(textOf(await line(4096)).length > 4000, "the server goes on");
  await client.close();
});

Deno.test("what a stdio server prints on stderr is logged at debug only, its credentials taken out", async () => {
  await using rig = await gatewayFor(rogue("chatty", "chatty"), { env: ENV });
  const client = await connectMcp(rig.gateway.url, rig.token);
  await client.callTool({ name: "chatty_line", arguments: { bytes: 10 } });
  await eventually(
    "the call's stderr line",
    () => rig.gateway.logs.find((line) => /called with/.test(String(line.text))),
  );
  const printed = rig.gateway.logs.filter((line) => /starting with|called with/.test(JSON.stringify(line)));
  assert.equal(printed.length, 2);
  for (const line of printed) {
    assert.deepEqual([line.level, line.event, line.server], ["debug", "mcp_server_stderr", "chatty"]);
    assert.match(String(line.text), /with \[redacted\]$/);
  }
  assert.ok(!JSON.stringify(rig.gateway.logs).includes(ENV.ROGUE_SECRET));
  await client.close();
});

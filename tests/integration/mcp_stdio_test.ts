/**
 * @module A stdio server run by the gateway: it starts with only the environment its config names (none of the
 * gateway's keys), and is started again when it exits.
 */
import assert from "node:assert/strict";
import { McpError } from "../_mcp_sdk.ts";
import { startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { UPSTREAM_KEYS } from "../_helpers.ts";

Deno.test("a stdio server's environment is exactly what its config names, and holds none of the gateway's secrets", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const env = JSON.parse(textOf(await client.callTool({ name: "local_env", arguments: {} })));
  // The test server's own Deno adds its Node shims to what it was started with; nothing else is there.
  const ownShims = (name: string) =>
    name === "DENO_NODE_SHIM_ACTIVE" || (name === "PATH" && /node_compat_bin$/.test(env.PATH));
  const named = ["GREETING", "HOME", ...Deno.env.get("DENO_DIR") ? ["DENO_DIR"] : []].sort();
  assert.deepEqual(Object.keys(env).filter((name) => !ownShims(name)).sort(), named);
  assert.equal(env.GREETING, "hello");
  assert.equal(env.HOME, Deno.env.get("HOME") ?? "/root");
  const text = JSON.stringify(env);
  for (const secret of [...Object.values(UPSTREAM_KEYS), "docs-upstream-secret", "sk-own", mcp.tokens.all]) {
    assert.ok(!text.includes(secret), secret);
  }
});

Deno.test("a stdio server that exits is started again, and its next call is served by the new process", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const before = textOf(await client.callTool({ name: "local_pid", arguments: {} }));
  const err = await client.callTool({ name: "local_exit", arguments: {} }).catch((e) => e);
  assert.ok(err instanceof McpError);
  assert.match(err.message, /MCP server "local" exited \(code 3\)/);
  const after = textOf(await client.callTool({ name: "local_pid", arguments: {} }));
  assert.notEqual(after, before);
  const view = mcp.gateway.deps.mcp.views().find((v) => v.name === "local")!;
  assert.equal(view.process?.state, "up");
  assert.equal(view.process?.restarts, 1);
  assert.ok(mcp.gateway.logs.some((line) => line.event === "mcp_server_exited" && line.server === "local"));
});

Deno.test("a stdio server's progress reaches the client that asked, under its own token", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const seen: number[] = [];
  const result = await client.callTool({ name: "local_progress", arguments: {} }, undefined, {
    onprogress: (progress) => void seen.push(progress.progress),
  });
  assert.deepEqual(seen, [1, 2]);
  // The server was given a token of the gateway's, not the client's.
  assert.match(textOf(result), /^done, token "p\d+"$/);
});

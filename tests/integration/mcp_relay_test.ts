/**
 * @module What passes between a server and a client through /mcp besides the answer: progress relayed on the call's
 * own stream, a server's request of the person refused as the gateway's capabilities say; and a server that is down,
 * hangs, answers too much or forgets its sessions being that server's problem only.
 */
import assert from "node:assert/strict";
import { McpError } from "../_mcp_sdk.ts";
import { startMcpGateway, textOf } from "../_mcp_gateway.ts";

Deno.test("progress a server reports during a call reaches the client, on the call's own stream", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const seen: number[] = [];
  const result = await client.callTool({ name: "docs_progress", arguments: {} }, undefined, {
    onprogress: (progress) => void seen.push(progress.progress),
  });
  assert.equal(textOf(result), "done");
  assert.deepEqual(seen, [1, 2]);
  const exchange = mcp.gateway.exchanges.find((e) => e.mcp?.name === "progress")!;
  assert.equal(exchange.stream, true);
  assert.ok(exchange.mcp!.response_bytes! > 0);
});

Deno.test("a server asking the person (elicitation) is answered Method not found, and its call goes on", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const result = await client.callTool({ name: "docs_ask", arguments: {} });
  assert.match(textOf(result), /^not asked: .*Method not found/);
});

Deno.test("a server that is down leaves its tools out and fails its calls at once; the others keep working", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  mcp.docs.mode = "down";
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  assert.ok(names.includes("local_echo"));
  assert.ok(!names.some((name) => name.startsWith("docs_")), names.join(", "));
  const err = await client.callTool({ name: "docs_search", arguments: { query: "q" } }).catch((e) => e);
  assert.ok(err instanceof McpError);
  assert.match(err.message, /MCP server "docs" is unavailable|answered HTTP 503/);
  assert.equal(textOf(await client.callTool({ name: "local_echo", arguments: { text: "still" } })), "still");
  const docs = mcp.gateway.deps.mcp.views().find((view) => view.name === "docs")!;
  assert.equal(docs.health.state, "down");
});

Deno.test("a server that hangs costs a listing its list timeout, and a call its timeout, then a clear error", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  await client.listTools();
  const slow = client.callTool({ name: "docs_slow", arguments: { ms: 60_000 } }).catch((e) => e);
  const err = await slow;
  assert.ok(err instanceof McpError);
  assert.equal(err.code, -32001);
  assert.match(err.message, /did not answer within 3000 ms/);
  mcp.docs.mode = "hang";
  mcp.gateway.deps.mcp.catalog.invalidate("docs");
  const started = Date.now();
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  assert.ok(Date.now() - started < 10_000);
  assert.ok(names.includes("local_echo") && !names.includes("docs_search"));
});

Deno.test("an answer larger than the server's bound is refused with an error, and the server goes on", async () => {
  await using mcp = await startMcpGateway({ serverYaml: "\n    max_answer_bytes: 65536" });
  const client = await mcp.connect(mcp.tokens.all);
  for (const server of ["local", "docs"]) {
    const err = await client.callTool({ name: `${server}_big`, arguments: { bytes: 200_000 } }).catch((e) => e);
    assert.ok(err instanceof McpError, server);
    assert.match(err.message, new RegExp(`"${server}" is larger than its limit of 65536 bytes`));
    assert.equal(textOf(await client.callTool({ name: `${server}_big`, arguments: { bytes: 10 } })).length, 10);
  }
  const exchange = mcp.gateway.exchanges.findLast((e) => e.mcp?.name === "big" && e.mcp.outcome === "too_large");
  assert.ok(exchange);
});

Deno.test("a server that forgot the client's session gets a new one, and the call goes through", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  assert.equal(textOf(await client.callTool({ name: "docs_search", arguments: { query: "a" } })), "found: a");
  mcp.docs.forgetSessions();
  assert.equal(textOf(await client.callTool({ name: "docs_search", arguments: { query: "b" } })), "found: b");
});

Deno.test("a server that redirects is not followed: its credentials go nowhere else, and it counts as down", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  mcp.docs.mode = "redirect";
  const err = await client.callTool({ name: "docs_search", arguments: { query: "q" } }).catch((e) => e);
  assert.ok(err instanceof McpError);
  assert.match(err.message, /MCP server "docs" answered HTTP 307/);
});

/**
 * @module HTTP servers that misbehave in what they answer: one agreeing a protocol version the gateway does not speak
 * is refused, a JSON answer carrying another id is not taken as the response, and a server whose URL holds a
 * credential (its userinfo, its query) has it taken out when it quotes it, and never sees its URL in an error.
 */
import assert from "node:assert/strict";
import { connectMcp, textOf } from "../_mcp_gateway.ts";
import { gatewayFor, type Got, INIT_RESULT, startRawMcpServer } from "../_mcp_rogue.ts";

const reply = (message: Got, result: unknown) => ({ jsonrpc: "2.0", id: message.id, result });
const ECHO = { name: "echo", inputSchema: { type: "object" } };

Deno.test("a server that agrees a protocol version the gateway does not speak is refused, and left out", async () => {
  await using server = startRawMcpServer((message) => {
    if (message.method === "initialize") return reply(message, { ...INIT_RESULT, protocolVersion: "2099-01-01" });
    if (message.method === "tools/list") return reply(message, { tools: [ECHO] });
  });
  await using rig = await gatewayFor(`  - { name: future, url: "${server.url}" }`);
  const client = await connectMcp(rig.gateway.url, rig.token);
  assert.deepEqual((await client.listTools()).tools, []);
  assert.ok(!server.got.some((got) => got.method === "tools/list"), "nothing is asked on a session it refused");
  const health = rig.gateway.deps.mcp.views()[0].health;
  assert.match(String(health.error), /MCP server "future" refused to open a session/);
  await client.close();
});

Deno.test("a JSON answer carrying another request's id is not taken as the response; in a stream it is passed over", async () => {
  let sse = false;
  await using server = startRawMcpServer((message) => {
    if (message.method === "tools/list") return reply(message, { tools: [ECHO] });
    if (message.method !== "tools/call") return undefined;
    const wrong = { jsonrpc: "2.0", id: `${message.id}-not`, result: { content: [{ type: "text", text: "wrong" }] } };
    if (!sse) return wrong;
    const right = reply(message, { content: [{ type: "text", text: "right" }] });
    const events = [wrong, right].map((event) => `event: message\ndata: ${JSON.stringify(event)}\n\n`).join("");
    return new Response(events, { headers: { "content-type": "text/event-stream" } });
  });
  await using rig = await gatewayFor(`  - { name: mixed, url: "${server.url}" }`);
  const client = await connectMcp(rig.gateway.url, rig.token);
  const err = await client.callTool({ name: "mixed_echo", arguments: {} }).catch((err) => err);
  assert.match(String(err?.message), /MCP server "mixed" answered with something other than JSON-RPC/);
  sse = true;
  assert.equal(textOf(await client.callTool({ name: "mixed_echo", arguments: {} })), "right");
  await client.close();
});

const PASSWORD = "url-pass+secret/9";
const QUERY_KEY = "url-query-secret-0123456789";

Deno.test("a credential kept in a server's URL is taken out where it quotes it, and the URL is in no error", async () => {
  let mode = "ok";
  await using server = startRawMcpServer(async (message) => {
    if (message.method === "tools/list") {
      return reply(message, { tools: [{ ...ECHO, description: `I got ${PASSWORD} and ${QUERY_KEY}` }] });
    }
    if (message.method !== "tools/call") return undefined;
    if (mode === "500") return new Response(`failed at ${server.url}`, { status: 500 });
    if (mode === "redirect") return Response.redirect(`${server.url}/elsewhere?key=${QUERY_KEY}`, 307);
    if (mode === "garbage") {
      return new Response(`<html>${server.url}</html>`, { headers: { "content-type": "application/json" } });
    }
    if (mode === "slow") await new Promise((resolve) => setTimeout(resolve, 1500));
    const quoted = `${PASSWORD} ${encodeURIComponent(PASSWORD)} ${QUERY_KEY}`;
    return reply(message, { content: [{ type: "text", text: quoted }] });
  });
  const { port } = new URL(server.url);
  const url = `http://token:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/mcp?api_key=${QUERY_KEY}&v=2`;
  await using rig = await gatewayFor(`  - { name: keyed, url: "${url}", timeout_ms: 500 }`);
  const client = await connectMcp(rig.gateway.url, rig.token);
  const [tool] = (await client.listTools()).tools;
  assert.equal(tool.description, "I got [redacted] and [redacted]");
  assert.equal(
    textOf(await client.callTool({ name: "keyed_echo", arguments: {} })),
    "[redacted] [redacted] [redacted]",
  );
  const errors: string[] = [];
  for (mode of ["500", "redirect", "garbage", "slow"]) {
    const err = await client.callTool({ name: "keyed_echo", arguments: {} }).catch((err) => err);
    assert.ok(err instanceof Error, mode);
    errors.push(err.message);
  }
  await server[Symbol.asyncDispose]();
  errors.push(String((await client.callTool({ name: "keyed_echo", arguments: {} }).catch((err) => err))?.message));
  rig.gateway.deps.mcp.catalog.invalidate("keyed");
  await client.listTools();
  assert.match(
    errors.join("\n"),
    /HTTP 500[\s\S]*HTTP 307[\s\S]*other than JSON-RPC[\s\S]*within 500 ms[\s\S]*connection/,
  );
  const said = [...errors, JSON.stringify(rig.gateway.logs), JSON.stringify(rig.gateway.deps.mcp.views())].join("\n");
  assert.ok(rig.gateway.logs.some((line) => line.event === "mcp_server_down"));
  for (const secret of [`127.0.0.1:${port}`, PASSWORD, encodeURIComponent(PASSWORD), QUERY_KEY]) {
    assert.ok(!said.includes(secret), `${secret} was said`);
  }
  await client.close();
});

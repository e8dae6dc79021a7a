/**
 * @module Guardrails on MCP tool calls through /mcp with the MCP SDK: a key in a call's arguments is masked before the
 * server gets it, a key in a tool's result is masked before the client gets it (and a placeholder there is never
 * restored), and a blocking rule refuses the call with a JSON-RPC error naming the rule and the kind.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { McpServer } from "../_mcp_sdk.ts";
import { connectMcp, textOf } from "../_mcp_gateway.ts";
import { startMcpHttpServer } from "../_mcp_servers.ts";
import { startGateway } from "../_helpers.ts";

const KEY = "AKIAXLNXB4EI6OCLOY6V";
const RESULT_KEY = "sk_live_7NLRwHlZvuCjp0xEFZo1zcfI";

function echoServer(seen: string[]): McpServer {
  const server = new McpServer({ name: "notes", version: "1.0.0" });
  server.registerTool("save", { description: "Saves a note", inputSchema: { note: z.string() } }, ({ note }) => {
    seen.push(note);
    return { content: [{ type: "text" as const, text: `saved ${note}; the billing key is ${RESULT_KEY}` }] };
  });
  return server;
}

function config(url: string, action: string) {
  return {
    extraYaml: `mcp_servers:
  - { name: notes, url: ${url} }
guardrails:
  - { name: no-secrets, detect: [secrets], scope: [input, tools], action: ${action}, restore: ${action === "mask"} }
`,
    extraGroups:
      '  - { name: tooling, listing: anthropic, models: [claude-test], mcp: { notes: "*" }, guardrails: [no-secrets] }\n',
  };
}

Deno.test("guardrails on MCP: arguments masked before the server, results masked before the client, nothing restored", async () => {
  await using notes = startMcpHttpServer(echoServer);
  await using gw = await startGateway("http://127.0.0.1:9", config(notes.url, "mask"));
  const token = (await gw.store.createToken({ group: "tooling" })).secret;
  const client = await connectMcp(gw.url, token);
  try {
    const result = await client.callTool({ name: "notes_save", arguments: { note: `aws ${KEY}` } });
    const placeholder = notes.seen.find((note) => note.startsWith("aws "))!;
    assert.match(placeholder, /^aws \[REDACTED:aws_access_key:[0-9a-f]{6}\]$/);
    const text = textOf(result);
    assert.ok(!text.includes(RESULT_KEY) && !text.includes(KEY), text);
    assert.match(text, /the billing key is \[REDACTED:stripe_key:[0-9a-f]{6}\]/);
    // The server's echo of the argument's placeholder stays a placeholder: a tool result is never restored.
    assert.ok(text.includes(placeholder.slice(4)));
  } finally {
    await client.close();
  }
  const call = gw.exchanges.find((exchange) => exchange.mcp?.method === "tools/call")!;
  assert.deepEqual(call.guardrails, [
    { rule: "no-secrets", kind: "aws_access_key", action: "mask", scope: "tools", count: 1 },
    { rule: "no-secrets", kind: "stripe_key", action: "mask", scope: "tools", count: 1 },
  ]);
});

Deno.test("guardrails on MCP: a blocking rule refuses the call with a JSON-RPC error, the server never called", async () => {
  await using notes = startMcpHttpServer(echoServer);
  await using gw = await startGateway("http://127.0.0.1:9", config(notes.url, "block"));
  const token = (await gw.store.createToken({ group: "tooling" })).secret;
  const client = await connectMcp(gw.url, token);
  try {
    const refused = await client.callTool({ name: "notes_save", arguments: { note: KEY } }).catch((err) => err);
    assert.match(String(refused.message), /guardrail "no-secrets": the tool call holds aws_access_key/);
    assert.ok(!String(refused.message).includes(KEY));
    assert.equal(notes.seen.filter((note) => note.includes("AKIA") || note.includes("REDACTED")).length, 0);
    // A clean call passes, and its result's key refuses the answer.
    const answer = await client.callTool({ name: "notes_save", arguments: { note: "hello" } }).catch((err) => err);
    assert.match(String(answer.message), /guardrail "no-secrets": the tool call holds stripe_key/);
  } finally {
    await client.close();
  }
});

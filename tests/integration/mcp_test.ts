/**
 * @module /mcp with the official SDK as the client, in front of an SDK server over Streamable HTTP and one over stdio:
 * listing and calling through both, a group's grant of tools, prompts and resources (a refused call never reaches the
 * server), the gateway's names, and the token as the only way in.
 */
import assert from "node:assert/strict";
import { McpError } from "../_mcp_sdk.ts";
import { DOCS_AUTH, postMcp, startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { LONG_TOOL } from "../_mcp_servers.ts";

/** The JSON-RPC error code a rejected SDK call carried. */
async function codeOf(call: Promise<unknown>): Promise<number> {
  const err = await call.then(() => undefined, (err) => err);
  assert.ok(err instanceof McpError, `expected an MCP error, got ${err}`);
  return err.code;
}

Deno.test("/mcp lists and calls the tools of an HTTP server and a stdio server, each under its server's name", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  for (const name of ["docs_search", "docs_secret", "local_echo", "local_env"]) assert.ok(names.includes(name), name);
  assert.equal(textOf(await client.callTool({ name: "docs_search", arguments: { query: "limits" } })), "found: limits");
  assert.equal(textOf(await client.callTool({ name: "local_echo", arguments: { text: "hi" } })), "hi");
  // The docs server sees the gateway's own credential for it, never the client's token.
  const calls = mcp.docs.headers.filter((headers) => headers.has("mcp-session-id"));
  assert.ok(calls.length > 0);
  for (const headers of mcp.docs.headers) {
    assert.equal(headers.get("authorization"), DOCS_AUTH);
    assert.ok(![...headers.values()].some((value) => value.includes(mcp.tokens.all)));
  }
  assert.equal(client.getServerVersion()?.name, "modelgate");
});

Deno.test("a name too long for Claude Code is shortened, stays unique, and still calls its tool", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  const long = names.find((name) => name.startsWith("docs_summarize"));
  assert.ok(long && long.length <= 48 && /^[A-Za-z0-9_-]+$/.test(long), String(long));
  assert.ok(`mcp__modelgate__${long}`.length <= 64);
  assert.equal(new Set(names).size, names.length);
  assert.equal(textOf(await client.callTool({ name: long, arguments: {} })), "summary");
  assert.ok(mcp.docs.seen.includes(`tools/call ${LONG_TOOL}`));
});

Deno.test("a group sees and calls only what its grant names; a refused call never reaches the server", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.tools);
  const tools = (await client.listTools()).tools.map((tool) => tool.name);
  assert.ok(tools.includes("docs_search") && tools.includes("local_echo"));
  assert.ok(!tools.includes("docs_secret"));
  assert.equal(await codeOf(client.callTool({ name: "docs_secret", arguments: {} })), -32602);
  assert.equal(await codeOf(client.callTool({ name: "docs_nothing", arguments: {} })), -32602);
  assert.equal(await codeOf(client.callTool({ name: "nowhere_search", arguments: {} })), -32602);

  const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
  assert.deepEqual(prompts, ["docs_greet"]);
  const greeting = await client.getPrompt({ name: "docs_greet", arguments: { name: "Ada" } });
  assert.deepEqual(greeting.messages[0].content, { type: "text", text: "Hello Ada" });
  assert.equal(await codeOf(client.getPrompt({ name: "docs_hidden" })), -32602);

  const resources = (await client.listResources()).resources.map((resource) => resource.uri);
  assert.deepEqual(resources, ["mcp+docs:docs://readme"]);
  const readme = await client.readResource({ uri: "mcp+docs:docs://readme" });
  assert.deepEqual(readme.contents, [{ uri: "mcp+docs:docs://readme", text: "# Readme" }]);
  const page = await client.readResource({ uri: "mcp+docs:docs://pages/intro" });
  assert.equal(page.contents[0].uri, "mcp+docs:docs://pages/intro");
  assert.equal(await codeOf(client.readResource({ uri: "mcp+docs:docs://secret" })), -32002);
  assert.equal(await codeOf(client.readResource({ uri: "docs://readme" })), -32002);
  // Templates are listed only with all of a server's resources granted.
  assert.deepEqual((await client.listResourceTemplates()).resourceTemplates, []);

  assert.ok(!mcp.docs.seen.some((seen) => /secret|hidden|nothing/.test(seen)), mcp.docs.seen.join(", "));
});

Deno.test("a tool list's grant gives its tools and no prompts or resources; no grant gives no session", async () => {
  await using mcp = await startMcpGateway();
  const searcher = await mcp.connect(mcp.tokens.searchers);
  assert.deepEqual((await searcher.listTools()).tools.map((tool) => tool.name), ["docs_search"]);
  assert.deepEqual((await searcher.listPrompts()).prompts, []);
  assert.deepEqual((await searcher.listResources()).resources, []);
  // A group without a grant would have nothing to use: its token gets no session, and is told why.
  const refused = await mcp.connect(mcp.tokens.none).then(() => undefined, (err) => err as Error);
  assert.match(String(refused?.message), /Forbidden: the group \\?"default\\?" of this token may use no MCP server/);
  const raw = await postMcp(mcp.gateway.url, {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  }, { authorization: `Bearer ${mcp.tokens.none}` });
  assert.equal(raw.status, 403);
  assert.equal(raw.headers.get("mcp-session-id"), null);
  assert.match(raw.body.error.message, /group "default" of this token may use no MCP server \(it has no mcp grant\)/);
  assert.equal((await Array.fromAsync(mcp.gateway.store.kv.list({ prefix: ["mcp_session"] }))).length, 1);
});

Deno.test("a resource link in a tool's result names the resource as the gateway serves it", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const result = await client.callTool({ name: "docs_link", arguments: {} });
  const link = (result.content as { uri: string }[])[0];
  assert.equal(link.uri, "mcp+docs:docs://readme");
  assert.deepEqual((await client.readResource({ uri: link.uri })).contents, [{ uri: link.uri, text: "# Readme" }]);
});

Deno.test("/mcp refuses a request without a valid token with 401 and a JSON-RPC error", async () => {
  await using mcp = await startMcpGateway();
  const init = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  };
  for (const authorization of [undefined, "Bearer sk-wrong"]) {
    const { status, headers, body } = await postMcp(mcp.gateway.url, init, authorization ? { authorization } : {});
    assert.equal(status, 401);
    // No token: the way to sign in (docs/mcp.md, "The 401"); a wrong key: only that it is invalid.
    const challenge = headers.get("www-authenticate") ?? "";
    assert.equal(challenge.includes("resource_metadata"), authorization === undefined, challenge);
    assert.equal(body.jsonrpc, "2.0");
    assert.equal(typeof body.error.message, "string");
  }
  assert.deepEqual(mcp.docs.seen, []);
});

Deno.test("a grant made through the admin API reaches the group's tokens; a grant of an unknown server is refused", async () => {
  await using mcp = await startMcpGateway({ admin: true });
  const created = await mcp.gateway.admin("POST", "/admin/groups", {
    name: "made",
    listing: "anthropic",
    models: ["claude-test"],
    mcp: { docs: ["search"] },
  });
  assert.equal(created.status, 201, await created.clone().text());
  await created.body?.cancel();
  const token = (await mcp.gateway.store.createToken({ group: "made" })).secret;
  const client = await mcp.connect(token);
  assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name), ["docs_search"]);
  const widened = await mcp.gateway.admin("PATCH", "/admin/groups/made", { mcp: { docs: "*", local: ["echo"] } });
  assert.equal(widened.status, 200);
  await widened.body?.cancel();
  // The token cache sees the change at its next check of the version key.
  await mcp.gateway.deps.operator.credentials.refreshed();
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  assert.ok(
    names.includes("docs_secret") && names.includes("local_echo") && !names.includes("local_env"),
    String(names),
  );
  const bad = await mcp.gateway.admin("PATCH", "/admin/groups/made", { mcp: { wiki: "*" } });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error.message, /mcp\.wiki: no MCP server "wiki" in mcp_servers/);
});

Deno.test("a server that quotes the credential the gateway sends it: its listing and answers reach the client redacted", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  const secret = DOCS_AUTH.slice("Bearer ".length);
  const tools = (await client.listTools()).tools;
  const leak = tools.find((tool) => tool.name === "docs_leak");
  assert.ok(leak);
  assert.equal(leak.description, "Knows [redacted]");
  const text = textOf(await client.callTool({ name: "docs_leak", arguments: {} }));
  assert.equal(text, "the key is [redacted], sent as [redacted]");
  const logged = JSON.stringify(mcp.gateway.logs);
  assert.ok(!logged.includes(secret), "no log line holds it either");
});

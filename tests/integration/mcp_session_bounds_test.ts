/**
 * @module What a client's MCP session may cost: a token keeps a bounded number (opening one more ends its oldest and
 * that one's sessions with servers), a session expires unused and is kept alive in use, its servers' sessions end
 * when it expires, two calls opening one server session at once leave one open, and every request to /mcp counts
 * against `mcp_requests_per_minute`.
 */
import assert from "node:assert/strict";
import { connectMcp, postMcp, startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { gatewayFor, startRawMcpServer } from "../_mcp_rogue.ts";

const search = (query: string) => ({ name: "docs_search", arguments: { query } });

/** The sessions in the gateway's KV. */
async function sessionsIn(kv: Deno.Kv): Promise<number> {
  return (await Array.fromAsync(kv.list({ prefix: ["mcp_session"] }))).length;
}

Deno.test("a token keeps max_sessions_per_token sessions: one more ends its oldest, and that one's server sessions", async () => {
  await using mcp = await startMcpGateway({ extraYaml: "mcp: { max_sessions_per_token: 2 }" });
  const first = await mcp.connect(mcp.tokens.all);
  const second = await mcp.connect(mcp.tokens.all);
  for (const client of [first, second]) assert.equal(textOf(await client.callTool(search("a"))), "found: a");
  const other = await mcp.connect(mcp.tokens.tools);
  const deleted = mcp.docs.sessions.deleted;
  const third = await mcp.connect(mcp.tokens.all);
  // The oldest is gone, with the session it had opened with the docs server; the others go on.
  assert.equal(mcp.docs.sessions.deleted, deleted + 1);
  const gone = await first.callTool(search("b")).catch((err) => err);
  assert.match(String(gone?.message), /404|Session not found/);
  for (const client of [second, third, other]) assert.equal(textOf(await client.callTool(search("c"))), "found: c");
  assert.equal(await sessionsIn(mcp.gateway.store.kv), 3, "two of the token's, one of the other token's");
});

Deno.test("a session unused for session_idle_ms expires and its server sessions end; one in use is kept alive", async () => {
  let now = Date.parse("2026-05-04T10:00:00Z");
  await using mcp = await startMcpGateway({ now: () => new Date(now), extraYaml: "mcp: { session_idle_ms: 60000 }" });
  const used = await mcp.connect(mcp.tokens.all);
  const idle = await mcp.connect(mcp.tokens.all);
  for (const client of [used, idle]) await client.callTool(search("start"));
  for (let step = 0; step < 3; step++) {
    now += 20_000;
    assert.equal(textOf(await used.callTool(search("again"))), "found: again");
  }
  now += 1;
  const expired = await idle.callTool(search("late")).catch((err) => err);
  assert.match(String(expired?.message), /404|Session not found/);
  const deleted = mcp.docs.sessions.deleted;
  assert.equal(await mcp.gateway.deps.mcp.sweep(), 1, "the expired session's server session is ended");
  assert.equal(mcp.docs.sessions.deleted, deleted + 1);
  assert.equal(await mcp.gateway.deps.mcp.sweep(), 0, "and only once");
  assert.equal(textOf(await used.callTool(search("still"))), "found: still");
});

Deno.test("two calls that open a client's session with a server at once leave one session open there", async () => {
  const bothOpening = Promise.withResolvers<void>();
  let opened = 0;
  await using server = startRawMcpServer(async (message) => {
    const reply = (result: unknown) => ({ jsonrpc: "2.0", id: message.id, result });
    if (message.method === "tools/list") return reply({ tools: [{ name: "echo", inputSchema: { type: "object" } }] });
    if (message.method === "tools/call") return reply({ content: [] });
    if (message.method !== "initialize" || ++opened === 1) return undefined;
    // The listing's session first; then the two calls' openings are held until both are under way.
    const id = `opened-${opened}`;
    if (opened === 3) bothOpening.resolve();
    await bothOpening.promise;
    return Response.json(reply({ protocolVersion: "2025-11-25", capabilities: {} }), {
      headers: { "mcp-session-id": id },
    });
  });
  await using rig = await gatewayFor(`  - { name: raw, url: "${server.url}" }`);
  const client = await connectMcp(rig.gateway.url, rig.token);
  await client.listTools();
  await Promise.all([1, 2].map(() => client.callTool({ name: "raw_echo", arguments: {} })));
  const ended = server.ended;
  assert.equal(ended.length, 1, "the session opened second is ended");
  const calls = server.got.filter((got) => got.method === "tools/call").map((got) => got.session);
  const kept = (await rig.gateway.deps.mcp.sessions.get(client.transport.sessionId!))!.upstream.raw.id;
  assert.deepEqual(calls, [kept, kept], "both calls went to the one kept");
  assert.notEqual(ended[0], kept);
  await client.close();
});

Deno.test("every request to /mcp counts against mcp_requests_per_minute: sessions, listings, notifications, calls", async () => {
  const NOW = new Date("2026-05-04T10:20:30Z");
  await using mcp = await startMcpGateway({ now: () => NOW });
  const limited =
    (await mcp.gateway.store.createToken({ group: "all", limits: { mcp_requests_per_minute: 5 } })).secret;
  const auth = { authorization: `Bearer ${limited}` };
  const init = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  const opened = await postMcp(mcp.gateway.url, init, auth);
  const session = { ...auth, "mcp-session-id": opened.headers.get("mcp-session-id")! };
  const sent = [
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
    { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 77 } },
    { jsonrpc: "2.0", id: 3, method: "tools/call", params: search("q") },
  ];
  for (const body of sent) assert.ok((await postMcp(mcp.gateway.url, body, session)).status < 300, body.method);
  const refused = await postMcp(mcp.gateway.url, { jsonrpc: "2.0", id: 4, method: "tools/list" }, session);
  assert.equal(refused.status, 429);
  assert.equal(refused.body.id, 4);
  assert.match(
    refused.body.error.message,
    /over its limit mcp_requests_per_minute = 5; it resets at 2026-05-04T10:21:00/,
  );
  assert.equal(refused.headers.get("retry-after"), "30");
  for (const body of [init, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3 } }]) {
    assert.equal((await postMcp(mcp.gateway.url, body, session)).status, 429, body.method);
  }
  const deleted = await fetch(`${mcp.gateway.url}/mcp`, { method: "DELETE", headers: session });
  assert.equal(deleted.status, 429);
  await deleted.body?.cancel();
  assert.equal(await sessionsIn(mcp.gateway.store.kv), 1, "a refused initialize opened no session");
  // Another token of the group is not held back by this one's limit.
  const other = await mcp.connect(mcp.tokens.all);
  assert.equal(textOf(await other.callTool(search("free"))), "found: free");
});

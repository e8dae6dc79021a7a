/**
 * @module A client's MCP session kept in KV: it goes on when its requests reach another instance on the same KV, with
 * the same session on the server, and ends for both instances at once.
 */
import assert from "node:assert/strict";
import { connectMcp, MCP_GROUPS, mcpEnv, mcpServersYaml, postMcp, textOf } from "../_mcp_gateway.ts";
import { startMcpHttpServer } from "../_mcp_servers.ts";
import { startGateway } from "../_helpers.ts";

Deno.test("a session opened on one instance goes on on another, on the same session with the server", async () => {
  await using docs = startMcpHttpServer();
  const kv = await Deno.openKv(":memory:");
  try {
    const options = { kv, extraYaml: mcpServersYaml(docs.url), extraGroups: MCP_GROUPS, env: mcpEnv() };
    await using first = await startGateway("http://127.0.0.1:9", options);
    await using second = await startGateway("http://127.0.0.1:9", options);
    const token = (await first.store.createToken({ group: "all" })).secret;
    const client = await connectMcp(first.url, token);
    assert.equal(textOf(await client.callTool({ name: "docs_search", arguments: { query: "one" } })), "found: one");
    const sessionId = client.transport.sessionId!;
    // The same session, its next requests sent to the other instance.
    const resumed = await connectMcp(second.url, token, { sessionId });
    assert.equal(textOf(await resumed.callTool({ name: "docs_search", arguments: { query: "two" } })), "found: two");
    // Both calls went to the docs server on one session of its own: the one the first instance opened for the client.
    const upstream = docs.headers.filter((h) => h.get("mcp-session-id")).map((h) => h.get("mcp-session-id"));
    const callSessions = new Set(
      first.exchanges.concat(second.exchanges).filter((e) => e.mcp?.method === "tools/call").map((e) => e.mcp!.session),
    );
    assert.deepEqual([...callSessions], [sessionId]);
    assert.ok(second.exchanges.some((e) => e.mcp?.method === "tools/call" && e.status === 200));
    const record = await first.deps.mcp.sessions.get(sessionId);
    const docsSession = record!.upstream.docs.id;
    // initialized, then the two calls; and no session of its own for the client from the second instance: the docs
    // server opened three in all, one per instance for its listings and the client's.
    assert.ok(docsSession && upstream.filter((id) => id === docsSession).length >= 3);
    assert.equal(docs.sessions.opened, 3);
    // Ended on the second instance, it is gone from KV, so for the first as well (once its copy of the record, kept
    // two seconds, is out of date).
    await resumed.transport.terminateSession();
    assert.equal((await kv.get(["mcp_session", sessionId])).value, null);
    assert.equal(await second.deps.mcp.sessions.get(sessionId), null);
    assert.equal(docs.sessions.deleted, 1);
    await client.close();
    await resumed.close();
  } finally {
    kv.close();
  }
});

Deno.test("a session ended on one instance is forgotten by another's copy of it within 2 s", async () => {
  await using docs = startMcpHttpServer();
  const kv = await Deno.openKv(":memory:");
  let now = Date.parse("2026-05-04T10:00:00Z");
  try {
    const options = {
      kv,
      now: () => new Date(now),
      extraYaml: mcpServersYaml(docs.url),
      extraGroups: MCP_GROUPS,
      env: mcpEnv(),
    };
    await using first = await startGateway("http://127.0.0.1:9", options);
    await using second = await startGateway("http://127.0.0.1:9", options);
    const token = (await first.store.createToken({ group: "all" })).secret;
    const client = await connectMcp(first.url, token);
    assert.equal(textOf(await client.callTool({ name: "docs_search", arguments: { query: "q" } })), "found: q");
    const sessionId = client.transport.sessionId!;
    const resumed = await connectMcp(second.url, token, { sessionId });
    await resumed.transport.terminateSession();
    // A ping asks no server: what answers it is the first instance's copy of the session, kept for up to 2 s.
    const ping = (id: number) =>
      postMcp(first.url, { jsonrpc: "2.0", id, method: "ping" }, {
        authorization: `Bearer ${token}`,
        "mcp-session-id": sessionId,
      });
    now += 1999;
    assert.equal((await ping(1)).status, 200, "within 2 s the copy may still answer");
    now += 1;
    const gone = await ping(2);
    assert.deepEqual([gone.status, gone.body.error.code], [404, -32001], "after 2 s it is forgotten");
    await client.close();
    await resumed.close();
  } finally {
    kv.close();
  }
});

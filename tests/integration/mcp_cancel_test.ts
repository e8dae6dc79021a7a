/**
 * @module Cancelling calls through /mcp: a client's notifications/cancelled stops its call and reaches the server
 * running it, and no other; an id the gateway runs no call for is dropped; a call that times out, or whose client
 * leaves, is cancelled at its HTTP server.
 */
import assert from "node:assert/strict";
import { connectMcp, postMcp } from "../_mcp_gateway.ts";
import { type FakeMcpServer, startMcpHttpServer } from "../_mcp_servers.ts";
import { eventually, gatewayFor } from "../_mcp_rogue.ts";

const SERVERS = (docs: string, wiki: string, extra = "") => `
  - { name: docs, url: "${docs}"${extra} }
  - { name: wiki, url: "${wiki}"${extra} }`;

const cancellations = (server: FakeMcpServer) =>
  server.notices.filter((notice) => notice.method === "notifications/cancelled");

Deno.test("a client's cancellation stops its call and reaches the server running it, and no other", async () => {
  await using docs = startMcpHttpServer();
  await using wiki = startMcpHttpServer();
  await using rig = await gatewayFor(SERVERS(docs.url, wiki.url));
  const client = await connectMcp(rig.gateway.url, rig.token);
  // The session has a session with both servers.
  for (const server of ["docs", "wiki"]) await client.callTool({ name: `${server}_search`, arguments: { query: "q" } });
  const stop = new AbortController();
  const call = client.callTool({ name: "docs_slow", arguments: { ms: 30_000 } }, undefined, { signal: stop.signal });
  await eventually("the slow call at the docs server", () => docs.seen.includes("tools/call slow") || undefined);
  stop.abort("changed my mind");
  await assert.rejects(call);
  await eventually("the slow tool to see its cancellation", () => docs.seen.includes("cancelled slow") || undefined);
  const [told] = cancellations(docs);
  assert.equal(cancellations(docs).length, 1, "the server running it is told once");
  assert.ok(typeof told.params?.requestId === "number", JSON.stringify(told));
  // A cancellation of an id the gateway runs nothing for goes nowhere.
  const session = { authorization: `Bearer ${rig.token}`, "mcp-session-id": client.transport.sessionId! };
  for (const requestId of [told.params?.requestId, 987654, "nothing"]) {
    const sent = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId } };
    assert.equal((await postMcp(rig.gateway.url, sent, session)).status, 202);
  }
  // The next call is answered after those notifications were handled: nothing more reached either server.
  await client.callTool({ name: "wiki_search", arguments: { query: "after" } });
  assert.equal(cancellations(docs).length, 1);
  assert.deepEqual(cancellations(wiki), []);
  await client.close();
});

Deno.test("a call past its server's timeout_ms, or whose client leaves, is cancelled at its HTTP server", async () => {
  await using docs = startMcpHttpServer();
  await using wiki = startMcpHttpServer();
  await using rig = await gatewayFor(SERVERS(docs.url, wiki.url, ", timeout_ms: 500"));
  const client = await connectMcp(rig.gateway.url, rig.token);
  const late = await client.callTool({ name: "docs_slow", arguments: { ms: 30_000 } }).catch((err) => err);
  assert.match(String(late?.message), /did not answer within 500 ms/);
  await eventually("the timed-out call's cancellation", () => docs.seen.includes("cancelled slow") || undefined);
  assert.equal(cancellations(docs)[0]?.params?.reason, "timeout");

  // A raw client leaves a call to the other server while it runs.
  const leaving = new AbortController();
  const call = fetch(`${rig.gateway.url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${rig.token}`,
      "mcp-session-id": client.transport.sessionId!,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "wiki_slow", arguments: { ms: 30_000 } },
    }),
    signal: leaving.signal,
  }).catch(() => undefined);
  await eventually("the call at the wiki server", () => wiki.seen.includes("tools/call slow") || undefined);
  leaving.abort();
  await call;
  await eventually("the left call's cancellation", () => wiki.seen.includes("cancelled slow") || undefined);
  assert.deepEqual(cancellations(wiki).map((notice) => notice.params?.requestId), [9]);
  await client.close();
});

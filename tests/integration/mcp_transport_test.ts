/**
 * @module /mcp as Streamable HTTP defines it, over raw HTTP: protocol versions agreed (and a 2026-07-28 client told to
 * fall back), sessions required, ended and kept to their token, every malformed request a JSON-RPC error with the
 * status the transport names (413 for an oversized body), the Origin check, and never a 500.
 */
import assert from "node:assert/strict";
import { postMcp, startMcpGateway } from "../_mcp_gateway.ts";
import { readText } from "../_helpers.ts";

function initialize(version: string, id: number | string = 1) {
  return {
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
}

Deno.test("initialize agrees 2025-06-18 or 2025-11-25, and answers any other version with 2025-11-25", async () => {
  await using mcp = await startMcpGateway();
  const auth = { authorization: `Bearer ${mcp.tokens.all}` };
  const cases: [string, string][] = [
    ["2025-06-18", "2025-06-18"],
    ["2025-11-25", "2025-11-25"],
    // A client of the revision without initialize that still opens with it gets the newest the gateway speaks.
    ["2026-07-28", "2025-11-25"],
    ["2024-11-05", "2025-11-25"],
  ];
  for (const [asked, agreed] of cases) {
    const { status, headers, body } = await postMcp(mcp.gateway.url, initialize(asked), auth);
    assert.equal(status, 200, asked);
    assert.equal(body.result.protocolVersion, agreed, asked);
    assert.match(headers.get("mcp-session-id") ?? "", /^[\x21-\x7e]+$/);
    assert.deepEqual(Object.keys(body.result.capabilities).sort(), ["prompts", "resources", "tools"]);
  }
});

Deno.test("a request without a session is refused with 400, so a 2026-07-28 client's discovery falls back", async () => {
  await using mcp = await startMcpGateway();
  const auth = { authorization: `Bearer ${mcp.tokens.all}`, "mcp-protocol-version": "2026-07-28" };
  const discover = await postMcp(mcp.gateway.url, { jsonrpc: "2.0", id: 1, method: "server/discover" }, auth);
  assert.equal(discover.status, 400);
  assert.equal(discover.body.error.code, -32000);
  assert.match(discover.body.error.message, /Mcp-Session-Id/);
  const list = await postMcp(mcp.gateway.url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, {
    authorization: `Bearer ${mcp.tokens.all}`,
  });
  assert.equal(list.status, 400);
});

Deno.test("bad input gets the JSON-RPC error the spec names, with the transport's status, and never a 500", async () => {
  await using mcp = await startMcpGateway({ maxBodyBytes: 4096 });
  const auth = { authorization: `Bearer ${mcp.tokens.all}` };
  const opened = await postMcp(mcp.gateway.url, initialize("2025-11-25"), auth);
  const session = { ...auth, "mcp-session-id": opened.headers.get("mcp-session-id")! };
  const cases: { name: string; body: unknown; headers?: Record<string, string>; status: number; code?: number }[] = [
    { name: "malformed JSON", body: "{not json", status: 400, code: -32700 },
    { name: "a batch", body: [{ jsonrpc: "2.0", id: 1, method: "ping" }], status: 400, code: -32600 },
    { name: "no jsonrpc", body: { id: 1, method: "ping" }, status: 400, code: -32600 },
    { name: "a number", body: 42, status: 400, code: -32600 },
    {
      name: "params not an object",
      body: { jsonrpc: "2.0", id: 1, method: "ping", params: [1] },
      status: 400,
      code: -32600,
    },
    { name: "an id of null", body: { jsonrpc: "2.0", id: null, method: "ping" }, status: 400, code: -32600 },
    { name: "an unknown method", body: { jsonrpc: "2.0", id: 1, method: "tools/dance" }, status: 200, code: -32601 },
    { name: "a call without a name", body: { jsonrpc: "2.0", id: 1, method: "tools/call" }, status: 200, code: -32602 },
    {
      name: "a read without a uri",
      body: { jsonrpc: "2.0", id: 1, method: "resources/read", params: {} },
      status: 200,
      code: -32602,
    },
    {
      name: "initialize without a version",
      body: { jsonrpc: "2.0", id: 1, method: "initialize" },
      status: 200,
      code: -32602,
    },
    {
      name: "a body too large",
      body: { jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "x".repeat(8000) } },
      status: 413,
    },
    {
      name: "no event-stream in Accept",
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { accept: "application/json" },
      status: 406,
    },
    {
      name: "a body not sent as JSON",
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { "content-type": "text/plain" },
      status: 415,
    },
    {
      name: "an unsupported protocol version",
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { "mcp-protocol-version": "1999-01-01" },
      status: 400,
    },
    {
      name: "an unknown session",
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { "mcp-session-id": "A".repeat(43) },
      status: 404,
      code: -32001,
    },
    {
      name: "a session id of any size",
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { "mcp-session-id": "x".repeat(3000) },
      status: 404,
    },
  ];
  for (const { name, body, headers, status, code } of cases) {
    const res = await postMcp(mcp.gateway.url, body, { ...session, ...headers });
    assert.equal(res.status, status, name);
    assert.equal(res.body?.jsonrpc, "2.0", name);
    if (code !== undefined) assert.equal(res.body.error.code, code, name);
    assert.equal(typeof res.body.error.message, "string", name);
  }
  const ping = await postMcp(mcp.gateway.url, { jsonrpc: "2.0", id: "p", method: "ping" }, session);
  assert.deepEqual(ping.body, { jsonrpc: "2.0", id: "p", result: {} });
  const note = await postMcp(mcp.gateway.url, { jsonrpc: "2.0", method: "notifications/initialized" }, session);
  assert.equal(note.status, 202);
  assert.ok(mcp.gateway.exchanges.every((exchange) => exchange.status < 500), "no request ended in a 5xx");
  assert.ok(!mcp.gateway.logs.some((line) => line.event === "internal_error"));
});

Deno.test("GET has no stream (405, Allow: POST, DELETE); a page of another site is refused with 403", async () => {
  await using mcp = await startMcpGateway();
  const auth = { authorization: `Bearer ${mcp.tokens.all}` };
  const get = await fetch(`${mcp.gateway.url}/mcp`, { headers: { ...auth, accept: "text/event-stream" } });
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST, DELETE");
  assert.equal(JSON.parse(await readText(get)).jsonrpc, "2.0");
  const foreign = await postMcp(mcp.gateway.url, initialize("2025-11-25"), { ...auth, origin: "https://evil.example" });
  assert.equal(foreign.status, 403);
  const own = await postMcp(mcp.gateway.url, initialize("2025-11-25"), { ...auth, origin: mcp.gateway.url });
  assert.equal(own.status, 200);
});

Deno.test("a session is its token's alone, and DELETE ends it with the sessions it opened upstream", async () => {
  await using mcp = await startMcpGateway();
  const auth = { authorization: `Bearer ${mcp.tokens.all}` };
  const opened = await postMcp(mcp.gateway.url, initialize("2025-11-25"), auth);
  const id = opened.headers.get("mcp-session-id")!;
  const call = {
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "docs_search", arguments: { query: "q" } },
  };
  const called = await postMcp(mcp.gateway.url, call, { ...auth, "mcp-session-id": id });
  assert.equal(called.body.result.content[0].text, "found: q");
  const other = await postMcp(mcp.gateway.url, call, {
    authorization: `Bearer ${mcp.tokens.tools}`,
    "mcp-session-id": id,
  });
  assert.equal(other.status, 404);
  const deleted = await fetch(`${mcp.gateway.url}/mcp`, {
    method: "DELETE",
    headers: { ...auth, "mcp-session-id": id },
  });
  assert.equal(deleted.status, 200);
  await deleted.body?.cancel();
  assert.equal(mcp.docs.sessions.deleted, 1, "the client's session with the docs server was ended");
  const after = await postMcp(mcp.gateway.url, call, { ...auth, "mcp-session-id": id });
  assert.equal(after.status, 404);
  assert.equal(after.body.error.code, -32001);
});

Deno.test("a method named like a property every object has is Method not found, as any other unknown one", async () => {
  await using mcp = await startMcpGateway();
  const auth = { authorization: `Bearer ${mcp.tokens.all}` };
  const opened = await postMcp(mcp.gateway.url, initialize("2025-11-25"), auth);
  const session = { ...auth, "mcp-session-id": opened.headers.get("mcp-session-id")! };
  const names = ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__", "__defineGetter__"];
  for (const [i, method] of names.entries()) {
    const res = await postMcp(mcp.gateway.url, { jsonrpc: "2.0", id: i, method }, session);
    assert.equal(res.status, 200, method);
    assert.deepEqual(res.body, {
      jsonrpc: "2.0",
      id: i,
      error: { code: -32601, message: `Method not found: ${method}` },
    });
  }
});

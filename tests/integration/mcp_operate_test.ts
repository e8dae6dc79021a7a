/**
 * @module Operating /mcp: every tools/call in the request log (never its arguments or result), in usage per token, owner,
 * group, server and tool, in the metrics with bounded labels, and counted against `tool_calls_per_minute` on tokens
 * and groups, a call past it refused with 429 and the time to wait, never reaching its server.
 */
import assert from "node:assert/strict";
import { postMcp, startMcpGateway } from "../_mcp_gateway.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, readText } from "../_helpers.ts";

/** A fixed clock in the middle of a UTC minute: a limit's window cannot roll over during the test. */
const NOW = new Date("2026-05-04T10:20:30Z");

Deno.test("each tools/call is in the request log and in usage per token, owner, group, server and tool", async () => {
  await using mcp = await startMcpGateway({ admin: true, now: () => NOW });
  const owned = await mcp.gateway.store.createToken({ group: "all", owner: "ada@example.com" });
  const client = await mcp.connect(owned.secret);
  await client.callTool({ name: "docs_search", arguments: { query: "private words" } });
  await client.callTool({ name: "docs_fail", arguments: {} });
  await client.callTool({ name: "docs_secret_nope", arguments: {} }).catch(() => {});
  await client.listTools();
  await mcp.gateway.flush();
  const log = await (await mcp.gateway.admin("GET", `/admin/requests?token=${owned.record.id}&since=1d`)).json();
  const tools = log.data.map((entry: Record<string, unknown>) => entry.tool);
  assert.equal(log.data.length, 3, "tool calls only: the listing is not logged");
  assert.deepEqual(tools.map((t: Record<string, unknown>) => [t.server, t.name, t.outcome]).sort(), [
    [null, null, "refused"],
    ["docs", "fail", "tool_error"],
    ["docs", "search", "ok"],
  ]);
  const search = log.data.find((entry: { tool: { name: string } }) => entry.tool.name === "search");
  assert.equal(search.owner, "ada@example.com");
  assert.equal(search.group, "all");
  assert.equal(search.route, "/mcp");
  assert.equal(search.protocol, "mcp");
  assert.equal(search.status, 200);
  assert.equal(typeof search.duration_ms, "number");
  assert.ok(search.tool.request_bytes > 0 && search.tool.response_bytes > 0);
  assert.ok(!JSON.stringify(log).includes("private words"), "no argument is logged");

  const rows = async (by: string) =>
    (await (await mcp.gateway.admin("GET", `/admin/usage?by=${by}&since=1d`)).json()).data;
  const pick = (list: Record<string, unknown>[]) => list.map((r) => [r.key, r.tool_calls, r.tool_errors, r.requests]);
  assert.deepEqual(pick(await rows("server")), [["docs", 2, 1, 0]]);
  assert.deepEqual(pick(await rows("tool")).sort(), [["docs/fail", 1, 1, 0], ["docs/search", 1, 0, 0]]);
  assert.deepEqual(pick(await rows("owner")), [["ada@example.com", 3, 2, 0]]);
  assert.deepEqual(pick(await rows("group")), [["all", 3, 2, 0]]);
  assert.deepEqual(pick((await rows("token")).filter((r: { key: string }) => r.key === owned.record.id)), [
    [owned.record.id, 3, 2, 0],
  ]);
});

Deno.test("the metrics count calls by server, method, tool and outcome; a client's names never become labels", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  await client.callTool({ name: "docs_search", arguments: { query: "q" } });
  await client.callTool({ name: "docs_invented_by_client", arguments: {} }).catch(() => {});
  await client.callTool({ name: "local_echo", arguments: { text: "t" } });
  const page = await readText(await fetch(`${mcp.gateway.url}/metrics`));
  assert.match(page, /modelgate_mcp_calls_total\{server="docs",method="tools\/call",name="search",outcome="ok"\} 1/);
  assert.match(page, /modelgate_mcp_calls_total\{server="local",method="tools\/call",name="echo",outcome="ok"\} 1/);
  assert.match(page, /modelgate_mcp_calls_total\{server="none",method="tools\/call",name="none",outcome="refused"\} 1/);
  assert.match(page, /modelgate_mcp_call_duration_seconds_count\{server="docs",method="tools\/call"\} 1/);
  assert.match(page, /modelgate_mcp_server_up\{server="docs"\} 1/);
  assert.ok(!page.includes("invented_by_client"));
});

/** A raw tools/call on an open session, for the status and headers a limit answers with. */
function rawCall(url: string, token: string, session: string, id: number) {
  const call = { jsonrpc: "2.0", id, method: "tools/call", params: { name: "docs_search", arguments: { query: "q" } } };
  return postMcp(url, call, { authorization: `Bearer ${token}`, "mcp-session-id": session });
}

Deno.test("tool_calls_per_minute on a token refuses the next call with 429, the wait, and no call upstream", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using mcp = await startMcpGateway({ now: () => NOW, upstreamUrl: upstream.url });
  const limited = await mcp.gateway.store.createToken({ group: "all", limits: { tool_calls_per_minute: 2 } });
  const client = await mcp.connect(limited.secret);
  const session = client.transport.sessionId!;
  await client.listTools();
  await client.listTools();
  for (const id of [1, 2]) assert.equal((await rawCall(mcp.gateway.url, limited.secret, session, id)).status, 200);
  const refused = await rawCall(mcp.gateway.url, limited.secret, session, 3);
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("retry-after"), "30");
  assert.equal(refused.body.id, 3);
  assert.equal(refused.body.error.code, -32000);
  assert.match(
    refused.body.error.message,
    /over its limit tool_calls_per_minute = 2; it resets at 2026-05-04T10:21:00/,
  );
  assert.deepEqual(refused.body.error.data, { retry_after_seconds: 30 });
  assert.equal(mcp.docs.seen.filter((seen) => seen === "tools/call search").length, 2);
  // Listings are not tool calls, and a model request of the same token is not held back by the tool limit.
  assert.equal((await client.listTools()).tools.length > 0, true);
  const model = await mcp.gateway.post("/v1/messages", messagesBody(), { "x-api-key": limited.secret });
  assert.equal(model.status, 200);
  await model.body?.cancel();
});

Deno.test("tool_calls_per_minute on a group counts every token of the group together", async () => {
  await using mcp = await startMcpGateway({
    now: () => NOW,
    extraGroups: `
  - { name: capped, listing: anthropic, models: [claude-test], mcp: { docs: "*" }, limits: { tool_calls_per_minute: 1 } }
`,
  });
  const [a, b] = [
    (await mcp.gateway.store.createToken({ group: "capped" })).secret,
    (await mcp.gateway.store.createToken({ group: "capped" })).secret,
  ];
  const first = await mcp.connect(a);
  const second = await mcp.connect(b);
  assert.equal((await rawCall(mcp.gateway.url, a, first.transport.sessionId!, 1)).status, 200);
  const refused = await rawCall(mcp.gateway.url, b, second.transport.sessionId!, 1);
  assert.equal(refused.status, 429);
  assert.match(refused.body.error.message, /Group "capped" is over its limit tool_calls_per_minute = 1/);
  const exchange = mcp.gateway.exchanges.findLast((e) => e.status === 429)!;
  assert.equal(exchange.mcp?.outcome, "rate_limited");
});

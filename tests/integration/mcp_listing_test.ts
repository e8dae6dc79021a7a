/**
 * @module The merged listings through /mcp: paged with nextCursor within `mcp.list_page_bytes`, each server's listing
 * stopped at its page cap, a down server not asked again at every listing, an HTTP server's list_changed taking
 * effect at once, names unique within a listing, and each listing in the access log with its outcome and size.
 */
import assert from "node:assert/strict";
import { McpError, McpServer } from "../_mcp_sdk.ts";
import { connectMcp, postMcp, startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { startMcpHttpServer } from "../_mcp_servers.ts";
import { gatewayFor, type Got, startRawMcpServer } from "../_mcp_rogue.ts";
import { exposedName } from "../../src/mcp/names.ts";

const reply = (message: Got, result: unknown) => ({ jsonrpc: "2.0", id: message.id, result });

/** A raw server listing `tools` (names), each with a description of `size` characters; a call answers its name. */
function toolServer(tools: string[], size = 10) {
  return startRawMcpServer((message) => {
    if (message.method === "tools/list") {
      const listed = tools.map((name) => ({ name, description: "d".repeat(size), inputSchema: { type: "object" } }));
      return reply(message, { tools: listed });
    }
    if (message.method === "tools/call") {
      return reply(message, { content: [{ type: "text", text: String(message.params?.name) }] });
    }
  });
}

Deno.test("a merged listing comes in pages of at most list_page_bytes, joined by nextCursor, each tool once", async () => {
  const names = (server: string) => Array.from({ length: 12 }, (_, i) => `${server}${i}`);
  await using one = toolServer(names("a"), 600);
  await using two = toolServer(names("b"), 600);
  await using three = toolServer(names("c"), 600);
  await using rig = await gatewayFor(
    [one, two, three].map((server, i) => `  - { name: s${i}, url: "${server.url}" }`).join("\n"),
    { settings: "list_page_bytes: 4096" },
  );
  const client = await connectMcp(rig.gateway.url, rig.token);
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    assert.ok(JSON.stringify(page.tools).length <= 4096, `page ${pages} holds ${JSON.stringify(page.tools).length}`);
    seen.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 50);
  const all = ["a", "b", "c"].flatMap((server, i) => names(server).map((name) => `s${i}_${name}`));
  assert.deepEqual(seen, all);
  assert.ok(pages >= 6, `${pages} pages`);
  const bad = await client.listTools({ cursor: "not-a-cursor" }).catch((err) => err);
  assert.ok(bad instanceof McpError);
  assert.equal(bad.code, -32602);
  await client.close();
});

Deno.test("a server that pages on forever is listed up to its page cap, and the listing ends", async () => {
  await using endless = startRawMcpServer((message) => {
    if (message.method !== "tools/list") return undefined;
    const page = Number(String(message.params?.cursor ?? "p0").slice(1));
    return reply(message, {
      tools: [{ name: `t${page}`, inputSchema: { type: "object" } }],
      nextCursor: `p${page + 1}`,
    });
  });
  await using rig = await gatewayFor(`  - { name: endless, url: "${endless.url}" }`);
  const client = await connectMcp(rig.gateway.url, rig.token);
  const { tools } = await client.listTools();
  assert.equal(endless.got.filter((got) => got.method === "tools/list").length, 100);
  assert.equal(tools.length, 100);
  await client.close();
});

Deno.test("a server that is down is not asked again at the next listings while it waits (2 s, doubling)", async () => {
  // The gateway's clock stands still, so the wait cannot end between the listings however slow the machine is.
  const now = new Date("2026-05-04T10:00:00Z");
  await using mcp = await startMcpGateway({ now: () => now });
  const client = await mcp.connect(mcp.tokens.all);
  mcp.docs.mode = "down";
  await client.listTools();
  const asked = mcp.docs.headers.length;
  assert.ok(asked > 0);
  for (let i = 0; i < 3; i++) assert.ok(!(await client.listTools()).tools.some((tool) => tool.name === "docs_search"));
  assert.equal(mcp.docs.headers.length, asked, "no listing asked it again");
});

Deno.test("an HTTP server's list_changed during a call makes the next listing ask it again", async () => {
  const fresh: { enable(): void; disable(): void }[] = [];
  await using server = startMcpHttpServer(() => {
    const made = new McpServer({ name: "grows", version: "1" });
    fresh.push(made.registerTool("fresh", { description: "New" }, () => ({ content: [] })));
    fresh.at(-1)!.disable();
    made.registerTool("grow", { description: "Adds a tool", inputSchema: {} }, async (_args, extra) => {
      for (const tool of fresh) tool.enable();
      await extra.sendNotification({ method: "notifications/tools/list_changed" });
      return { content: [{ type: "text", text: "grown" }] };
    });
    return made;
  });
  await using rig = await gatewayFor(`  - { name: grows, url: "${server.url}" }`);
  const client = await connectMcp(rig.gateway.url, rig.token);
  assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name), ["grows_grow"]);
  assert.equal(textOf(await client.callTool({ name: "grows_grow", arguments: {} })), "grown");
  assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), ["grows_fresh", "grows_grow"]);
  await client.close();
});

Deno.test("a shortened name and a plain one that read the same are listed apart, and each calls its own tool", async () => {
  // The plain name a server could give that reads as the gateway's shortened name of "pages.read".
  const lookalike = exposedName("odd", "pages.read", 48).slice("odd_".length);
  await using server = toolServer(["pages.read", lookalike, "pages.read"]);
  await using rig = await gatewayFor(`  - { name: odd, url: "${server.url}" }`);
  const client = await connectMcp(rig.gateway.url, rig.token);
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  assert.equal(names.length, 2, names.join(", "));
  assert.equal(new Set(names).size, 2, names.join(", "));
  const called = await Promise.all(names.map(async (name) => textOf(await client.callTool({ name, arguments: {} }))));
  assert.deepEqual(called.sort(), [lookalike, "pages.read"].sort());
  await client.close();
});

Deno.test("each listing's access log line has its outcome and the bytes of its answer", async () => {
  await using mcp = await startMcpGateway();
  const client = await mcp.connect(mcp.tokens.all);
  await client.listTools();
  const session = { authorization: `Bearer ${mcp.tokens.all}`, "mcp-session-id": client.transport.sessionId! };
  const raw = await fetch(`${mcp.gateway.url}/mcp`, {
    method: "POST",
    headers: { ...session, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: "p", method: "prompts/list" }),
  });
  const bytes = (await raw.arrayBuffer()).byteLength;
  const line = (method: string) =>
    mcp.gateway.logs.findLast((line) => line.event === "request" && (line.mcp as { method: string })?.method === method)
      ?.mcp as Record<string, unknown>;
  assert.deepEqual([line("prompts/list").outcome, line("prompts/list").response_bytes], ["ok", bytes]);
  assert.equal(line("tools/list").outcome, "ok");
  assert.ok(Number(line("tools/list").response_bytes) > 1000);
  const bad = await postMcp(
    mcp.gateway.url,
    { jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: 5 } },
    session,
  );
  assert.equal(bad.body.error.code, -32602);
  assert.equal(line("tools/list").outcome, "invalid");
});

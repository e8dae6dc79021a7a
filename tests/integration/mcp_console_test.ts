/**
 * @module The console's MCP page: each server with its transport, where its credentials come from (never their
 * values), its state as this instance sees it, its tools under the names clients see, and the groups that may call each.
 */
import assert from "node:assert/strict";
import { open, signIn } from "../_console.ts";
import { startMcpGateway } from "../_mcp_gateway.ts";

Deno.test("the MCP page shows servers, their state, their tools and which groups may use which", async () => {
  await using mcp = await startMcpGateway({ admin: true });
  const cookie = await signIn(mcp.gateway);
  const page = await open(mcp.gateway, "/ui/mcp", cookie);
  assert.equal(page.status, 200);
  assert.match(page.text, /<strong>docs<\/strong>/);
  assert.match(page.text, /<strong>local<\/strong>/);
  assert.match(page.text, /Streamable HTTP/);
  assert.match(page.text, /<code>Authorization<\/code> ← <code>DOCS_AUTH<\/code>/);
  assert.ok(!page.text.includes("docs-upstream-secret"), "a credential's value is never shown");
  assert.match(
    page.text,
    /<code>docs_search<\/code><\/td>\s*<td>docs<\/td>\s*<td[^>]*>Search the docs<\/td>\s*<td[^>]*>all, searchers, tools<\/td>/,
  );
  assert.match(
    page.text,
    /<code>docs_secret<\/code><\/td>\s*<td>docs<\/td>\s*<td[^>]*>Not for everyone<\/td>\s*<td[^>]*>all<\/td>/,
  );
  assert.match(page.text, /badge ok">up</);
  mcp.docs.mode = "down";
  mcp.gateway.deps.mcp.catalog.invalidate("docs");
  const down = await open(mcp.gateway, "/ui/mcp", cookie);
  assert.match(down.text, /badge bad">down<\/span>.*answered HTTP 503/s);
});

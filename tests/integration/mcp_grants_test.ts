/**
 * @module Resource grants as they match: an entry ending in `*` allows only URIs that start with what comes before it,
 * and none that a server could read as another URI (a `.` or `..` segment, an encoded dot, slash or backslash), so
 * `docs://pages/*` never reaches `docs://secret`.
 */
import assert from "node:assert/strict";
import { McpError } from "../_mcp_sdk.ts";
import { startMcpGateway } from "../_mcp_gateway.ts";

Deno.test("a resource grant ending in * matches only URIs that start with its prefix, and none that leave it", async () => {
  await using mcp = await startMcpGateway();
  // The tools group is granted docs://readme and docs://pages/*.
  const client = await mcp.connect(mcp.tokens.tools);
  const page = await client.readResource({ uri: "mcp+docs:docs://pages/intro" });
  assert.equal(page.contents[0].uri, "mcp+docs:docs://pages/intro");
  const before = mcp.docs.seen.length;
  const refused = [
    "docs://secret?docs://pages/",
    "docs://secret#docs://pages/",
    "docs://pages",
    "docs://page/s",
    "docs://pages/../secret",
    "docs://pages/./../secret",
    "docs://pages/..",
    "docs://pages\\..\\secret",
    "docs://pages/%2e%2e/secret",
    "docs://pages/%2E%2E/secret",
    "docs://pages/.%2e/secret",
    "docs://pages/..%2fsecret",
    "docs://pages/..%5Csecret",
    "docs://pages/%252e%252e/secret",
  ];
  for (const uri of refused) {
    const err = await client.readResource({ uri: `mcp+docs:${uri}` }).catch((err) => err);
    assert.ok(err instanceof McpError, uri);
    assert.equal(err.code, -32002, uri);
  }
  assert.deepEqual(mcp.docs.seen.slice(before), [], "none of them reached the server");
  // A name of dots that is no segment of its own is a page like any other.
  assert.equal((await client.readResource({ uri: "mcp+docs:docs://pages/v1..2" })).contents.length, 1);
});

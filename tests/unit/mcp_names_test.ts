/**
 * @module The names the gateway gives what it merges (short, unique within a listing, back to their server) and how a
 * group's grant matches them, a resource grant's prefix included.
 */
import assert from "node:assert/strict";
import {
  allows,
  allowsAll,
  exposedName,
  exposedUri,
  leavesPrefix,
  nameTable,
  originalUri,
  serverOf,
} from "../../src/mcp/names.ts";

Deno.test("exposedName() prefixes the server, and shortens a long or odd name with a tag that keeps it unique", () => {
  assert.equal(exposedName("docs", "search", 48), "docs_search");
  const long = "summarize_the_whole_knowledge_base_with_every_detail_included";
  const short = exposedName("docs", long, 48);
  assert.equal(short.length, 48);
  assert.match(short, /^docs_summarize_the_whole_know[a-z_]*_[0-9a-f]{8}$/);
  assert.notEqual(short, exposedName("docs", `${long}_too`, 48));
  assert.match(exposedName("docs", "pages.read", 48), /^docs_pages_read_[0-9a-f]{8}$/);
  assert.notEqual(exposedName("docs", "pages.read", 48), exposedName("docs", "pages/read", 48));
  assert.equal(serverOf("docs_pages_read_0abc"), "docs");
  assert.equal(serverOf("_x"), undefined);
  assert.equal(serverOf("nounderscore"), undefined);
});

Deno.test("a resource URI goes out with its server and comes back to it", () => {
  assert.equal(exposedUri("docs", "file:///a b"), "mcp+docs:file:///a b");
  assert.deepEqual(originalUri("mcp+docs:file:///a b"), { server: "docs", uri: "file:///a b" });
  assert.equal(originalUri("file:///a"), undefined);
  assert.equal(originalUri("mcp+:x"), undefined);
});

Deno.test("allows() reads a grant: everything, a list of tools, or each kind apart", () => {
  const grant = {
    all: "*" as const,
    some: ["search"],
    mixed: { tools: "*" as const, prompts: ["greet"], resources: ["docs://pages/*", "docs://readme"] },
  };
  const cases: [string, "tools" | "prompts" | "resources", string, boolean][] = [
    ["all", "tools", "anything", true],
    ["all", "resources", "x://y", true],
    ["some", "tools", "search", true],
    ["some", "tools", "secret", false],
    ["some", "prompts", "search", false],
    ["mixed", "tools", "x", true],
    ["mixed", "prompts", "greet", true],
    ["mixed", "prompts", "other", false],
    ["mixed", "resources", "docs://pages/intro", true],
    ["mixed", "resources", "docs://readme", true],
    ["mixed", "resources", "docs://readme2", false],
    ["none", "tools", "search", false],
  ];
  for (const [server, kind, name, want] of cases) {
    assert.equal(allows(grant, server, kind, name), want, `${server} ${name}`);
  }
  assert.equal(allows(undefined, "all", "tools", "x"), false);
  assert.equal(allowsAll(grant, "mixed", "resources"), false);
  assert.equal(allowsAll(grant, "all", "resources"), true);
});

Deno.test("nameTable() gives each name of a listing its own: a plain one keeps it, a shortened lookalike is re-tagged", () => {
  const shortOfDotted = exposedName("docs", "pages.read", 48);
  const lookalike = shortOfDotted.slice("docs_".length);
  const table = nameTable("docs", ["pages.read", lookalike, "search", "search"], 48);
  assert.equal(table.exposed.get(lookalike), shortOfDotted, "the plain name keeps what it reads as");
  assert.equal(table.exposed.get("search"), "docs_search");
  const dotted = table.exposed.get("pages.read")!;
  assert.notEqual(dotted, shortOfDotted);
  assert.match(dotted, /^docs_pages_read_[0-9a-f]{8}$/);
  assert.equal(table.exposed.size, 3);
  assert.deepEqual([...table.own].map(([as, own]) => table.exposed.get(own) === as), [true, true, true]);
  // Without a collision, the table's names are the ones exposedName() gives.
  const plain = nameTable("docs", ["pages.read", "search"], 48);
  assert.equal(plain.exposed.get("pages.read"), shortOfDotted);
});

Deno.test("leavesPrefix() finds dot segments and encoded dots, slashes and backslashes, and nothing else", () => {
  const cases: [string, boolean][] = [
    ["docs://pages/intro", false],
    ["docs://pages/v1..2", false],
    ["docs://pages/.hidden", false],
    ["docs://pages/a%20b", false],
    ["docs://pages/../secret", true],
    ["docs://pages/./x", true],
    ["docs://pages/..", true],
    ["docs://pages/..?q", true],
    ["docs://pages\\..\\secret", true],
    ["docs://pages/%2e%2e/secret", true],
    ["docs://pages/%2E./secret", true],
    ["docs://pages/..%2Fsecret", true],
    ["docs://pages/..%5csecret", true],
    ["docs://pages/%252e%252e/secret", true],
    ["docs://pages/%25252F", true],
  ];
  for (const [uri, want] of cases) assert.equal(leavesPrefix(uri), want, uri);
  assert.equal(allows({ docs: { resources: ["docs://pages/*"] } }, "docs", "resources", "docs://pages/../x"), false);
  assert.equal(allows({ docs: { resources: ["docs://pages/../x"] } }, "docs", "resources", "docs://pages/../x"), true);
});

/**
 * @module The pure parts of /mcp: the config of servers and grants (errors naming the YAML path), the names the gateway
 * gives (short, unique, back to their server), grants, JSON-RPC messages told apart, a stdio server's lines and restart
 * backoff, and stdio servers refused on Deno Deploy.
 */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../src/core/config_load.ts";
import { CODES, RpcError, toMessage } from "../../src/mcp/jsonrpc.ts";
import { allows, allowsAll, exposedName, exposedUri, originalUri, serverOf } from "../../src/mcp/names.ts";
import { backoffMs, lineSplitter } from "../../src/mcp/stdio_lines.ts";
import { serverEnvironment } from "../../src/mcp/stdio_link.ts";
import { mcpCommands } from "../../src/serve/server.ts";
import { mcpSecrets, mcpWarnings } from "../../src/mcp/secrets.ts";

const BASE = `upstreams:
  - { name: a, protocol: anthropic, base_url: "https://api.example.test/v1", api_key_env: KEY, models: [m] }
groups:
  - { name: g, listing: anthropic, models: [m], mcp: { docs: "*" } }
mcp_servers:
  - { name: docs, url: "https://mcp.example.test/mcp", headers: { Authorization: DOCS_TOKEN } }
`;

const CONFIG_CASES = [
  {
    name: "a name with an underscore",
    yaml: BASE.replace("name: docs", "name: my_docs"),
    want: /mcp_servers\[0\]\.name/,
  },
  { name: "a name in capitals", yaml: BASE.replace("name: docs", "name: Docs"), want: /mcp_servers\[0\]\.name/ },
  {
    name: "both url and command",
    yaml: BASE.replace("headers:", "command: [npx, x], headers:"),
    want: /mcp_servers\[0\]: must have exactly one of url or command/,
  },
  {
    name: "neither url nor command",
    yaml: BASE.replace('url: "https://mcp.example.test/mcp", headers: { Authorization: DOCS_TOKEN }', "timeout_ms: 5"),
    want: /mcp_servers\[0\]/,
  },
  {
    name: "a header's value in the file",
    yaml: BASE.replace("Authorization: DOCS_TOKEN", 'Authorization: "Bearer abc"'),
    want: /mcp_servers\[0\]\.headers\.Authorization: must be an environment variable's name/,
  },
  {
    name: "a header the gateway sets itself",
    yaml: BASE.replace("Authorization: DOCS_TOKEN", "Mcp-Session-Id: X"),
    want: /mcp_servers\[0\]\.headers\.Mcp-Session-Id: is set by the gateway itself/,
  },
  {
    name: "env on a url server",
    yaml: BASE.replace("headers: { Authorization: DOCS_TOKEN }", "env: { A: B }"),
    want: /mcp_servers\[0\]\.env: is only for a server with a command/,
  },
  {
    name: "a duplicate server",
    yaml: BASE + '  - { name: docs, command: ["x"] }\n',
    want: /mcp_servers\[1\]\.name: duplicate MCP server "docs"/,
  },
  {
    name: "a grant of an unknown server",
    yaml: BASE.replace('mcp: { docs: "*" }', 'mcp: { wiki: "*" }'),
    want: /groups\[0\]\.mcp\.wiki: no MCP server "wiki" in mcp_servers/,
  },
  {
    name: "a grant of the wrong shape",
    yaml: BASE.replace('mcp: { docs: "*" }', "mcp: { docs: { tools: 3 } }"),
    want: /groups\[0\]\.mcp\.docs/,
  },
  {
    name: "a limit of tool calls that is not a count",
    yaml: BASE.replace("models: [m], mcp", "models: [m], limits: { tool_calls_per_minute: 0 }, mcp"),
    want: /groups\[0\]\.limits\.tool_calls_per_minute/,
  },
];

for (const { name, yaml, want } of CONFIG_CASES) {
  Deno.test(`parseConfig() refuses ${name}, naming the field`, () => {
    assert.throws(
      () => parseConfig(yaml, "cfg.yaml"),
      (err: unknown) => err instanceof ConfigError && want.test(err.message),
    );
  });
}

Deno.test("parseConfig() takes servers and grants, with their defaults", () => {
  const config = parseConfig(BASE + '  - { name: local, command: ["npx", "-y", "srv"], env: { PATH: PATH } }\n', "c");
  assert.equal(config.mcp_servers[0].timeout_ms, 60_000);
  assert.equal(config.mcp_servers[1].max_answer_bytes, 4 * 1024 * 1024);
  assert.deepEqual(config.groups[0].mcp, { docs: "*" });
  assert.equal(config.mcp.name_max_length, 48);
  assert.deepEqual(
    parseConfig(BASE.replace(/mcp_servers:[\s\S]*/, "").replace(', mcp: { docs: "*" }', ""), "c")
      .mcp_servers,
    [],
  );
});

Deno.test("a stdio server keeps the permission to start programs (Deno Deploy runs them too); HTTP servers alone do not", () => {
  const stdio = parseConfig(BASE + '  - { name: local, command: ["srv"] }\n', "c");
  assert.equal(mcpCommands(stdio), true);
  assert.equal(mcpCommands(parseConfig(BASE, "c")), false);
});

Deno.test("serverEnvironment() is exactly the variables the config names, valued from the gateway's", () => {
  const config = parseConfig(
    BASE + '  - { name: local, command: ["srv"], env: { TOKEN: GH_TOKEN, PATH: PATH } }\n',
    "c",
  );
  const env: Record<string, string> = { GH_TOKEN: "gh-1", PATH: "/bin", MODELGATE_ADMIN_KEY: "admin", KEY: "up" };
  assert.deepEqual(serverEnvironment(config.mcp_servers[1], (name) => env[name]), { TOKEN: "gh-1", PATH: "/bin" });
});

Deno.test("mcpWarnings() names each header or environment variable a server is to get that is not set", () => {
  const config = parseConfig(BASE + '  - { name: local, command: ["srv"], env: { TOKEN: GH_TOKEN } }\n', "c");
  assert.deepEqual(mcpWarnings(config, () => undefined), [
    'warning: MCP server "docs" names DOCS_TOKEN, which is not set; it goes without it',
    'warning: MCP server "local" names GH_TOKEN, which is not set; it goes without it',
  ]);
  assert.deepEqual(mcpWarnings(config, () => "set"), []);
});

Deno.test("mcpSecrets() holds header values, a Bearer's token and long environment values, but not file paths", () => {
  const config = parseConfig(
    BASE +
      "  - name: local\n    command: [srv]\n    env: { HOME: HOME, PATH: PATH, MODE: MODE, DB: DB, API: API, KEY_FILE: KEYF, WIN: WIN }\n",
    "c",
  );
  const env: Record<string, string> = {
    DOCS_TOKEN: "Bearer docs-token-1234",
    HOME: "/home/developer",
    PATH: "/usr/local/bin:/usr/bin:/bin",
    WIN: "C:\\Windows;C:\\Tools\\bin",
    MODE: "production",
    DB: "postgres://app:hunter2hunter2@db/app",
    API: "ghp_0123456789abcdef",
    KEYF: "/run/secrets/the-key-itself",
  };
  assert.deepEqual(mcpSecrets(config, (name) => env[name]).sort(), [
    "/run/secrets/the-key-itself", // a path, but its name says key
    "Bearer docs-token-1234",
    "docs-token-1234",
    "ghp_0123456789abcdef",
    "postgres://app:hunter2hunter2@db/app",
  ]);
});

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

Deno.test("toMessage() tells requests, notifications and responses apart and names what is wrong", () => {
  assert.ok(!(toMessage({ jsonrpc: "2.0", id: 1, method: "ping" }) instanceof RpcError));
  assert.ok(!(toMessage({ jsonrpc: "2.0", method: "notifications/initialized" }) instanceof RpcError));
  assert.ok(!(toMessage({ jsonrpc: "2.0", id: 1, result: {} }) instanceof RpcError));
  const bad: [unknown, RegExp][] = [
    [[], /batches/],
    ["x", /JSON object/],
    [{ id: 1, method: "ping" }, /jsonrpc/],
    [{ jsonrpc: "2.0", id: true, method: "ping" }, /id/],
    [{ jsonrpc: "2.0", id: 1, method: "" }, /method/],
    [{ jsonrpc: "2.0", id: 1, method: "ping", params: "x" }, /params/],
    [{ jsonrpc: "2.0", id: 1 }, /result/],
    [{ jsonrpc: "2.0", id: 1, result: {}, error: {} }, /exactly one/],
  ];
  for (const [value, want] of bad) {
    const message = toMessage(value);
    assert.ok(message instanceof RpcError, JSON.stringify(value));
    assert.equal(message.code, CODES.invalidRequest);
    assert.match(message.message, want);
  }
});

Deno.test("lineSplitter() splits lines across chunks, and of a line too long keeps only its ends", () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  const split = lineSplitter(16);
  assert.deepEqual(split.push(encode('{"a":1}\n{"b"')), [{ text: '{"a":1}', tooLarge: false }]);
  assert.deepEqual(split.push(encode(":2}\r\n\n")), [{ text: '{"b":2}', tooLarge: false }]);
  const long = split.push(encode(`{"x":"${"y".repeat(40)}","id":7}\nok\n`));
  assert.equal(long[0].tooLarge, true);
  assert.match(long[0].tail!, /"id":7}$/);
  assert.deepEqual(long[1], { text: "ok", tooLarge: false });
});

Deno.test("backoffMs() restarts at once the first time, then waits 1 s doubling up to a minute", () => {
  assert.deepEqual([1, 2, 3, 4, 8, 20].map(backoffMs), [0, 1000, 2000, 4000, 60_000, 60_000]);
});

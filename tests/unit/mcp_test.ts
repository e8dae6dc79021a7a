/**
 * @module The pure parts of /mcp: the config of servers and grants (errors naming the YAML path), the credentials among
 * the values it hands the servers, JSON-RPC messages told apart, a stdio server's lines and restart backoff, and stdio
 * servers refused on Deno Deploy. The names and grants are in ./mcp_names_test.ts.
 */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../src/core/config_load.ts";
import { CODES, RpcError, toMessage } from "../../src/mcp/jsonrpc.ts";
import { backoffMs, lineSplitter } from "../../src/mcp/stdio_lines.ts";
import { serverEnvironment } from "../../src/mcp/stdio_link.ts";
import { mcpCommands } from "../../src/serve/server.ts";
import { mcpSecrets, mcpWarnings, urlSecrets } from "../../src/mcp/secrets.ts";

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
    name: "a limit of /mcp requests that is not a count",
    yaml: BASE.replace("models: [m], mcp", "models: [m], limits: { mcp_requests_per_minute: 1.5 }, mcp"),
    want: /groups\[0\]\.limits\.mcp_requests_per_minute/,
  },
  {
    name: "a page of listings too small for a tool",
    yaml: BASE + "mcp: { list_page_bytes: 100 }\n",
    want: /mcp\.list_page_bytes/,
  },
  {
    name: "a token kept to no session",
    yaml: BASE + "mcp: { max_sessions_per_token: 0 }\n",
    want: /mcp\.max_sessions_per_token/,
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
  assert.equal(config.mcp.max_sessions_per_token, 100);
  assert.equal(config.mcp.list_page_bytes, 1024 * 1024);
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

Deno.test("urlSecrets() takes a URL's password (or token user) and long query values, written and decoded", () => {
  assert.deepEqual(urlSecrets("https://user:p%40ss-word@h.example/mcp?key=abcdefghijkl%2Bmn&v=2&flag"), [
    "p%40ss-word",
    "p@ss-word",
    "abcdefghijkl%2Bmn",
    "abcdefghijkl+mn",
  ]);
  assert.deepEqual(urlSecrets("https://ghp_tokentoken@h.example/mcp"), ["ghp_tokentoken"]);
  assert.deepEqual(urlSecrets("https://a:b@h.example/mcp?mode=readonly"), []);
  assert.deepEqual(urlSecrets("https://h.example/mcp"), []);
  const config = parseConfig(
    BASE.replace("https://mcp.example.test/mcp", "https://u:hunter22@mcp.example.test/mcp"),
    "c",
  );
  assert.ok(mcpSecrets(config, () => undefined).includes("hunter22"));
});

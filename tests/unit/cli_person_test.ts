/**
 * @module The person's side of the CLI, its pure parts: where the login is kept, the gateway's root from what a
 * person types, the environment and arguments `run` gives a command, `--` on the command line, and how the person
 * started the CLI (for the command it tells them to run next).
 */
import assert from "node:assert/strict";
import { parseArgs } from "../../src/cli/args.ts";
import type { Credentials } from "../../src/cli/credentials.ts";
import { credentialsPath } from "../../src/cli/credentials.ts";
import { gatewayRoot, plainHttpWarning } from "../../src/cli/login.ts";
import { invokedAs } from "../../src/cli/program.ts";
import { runArguments, runEnvironment } from "../../src/cli/run.ts";

const LOGIN: Credentials = {
  gateway: "https://gw.example.com",
  token: "sk-person-secret",
  token_id: "tok_1",
  owner: "ada@example.com",
  group: "default",
  expires_at: null,
};

const PATHS: { name: string; env: Record<string, string>; want: string }[] = [
  { name: "uses XDG_CONFIG_HOME", env: { XDG_CONFIG_HOME: "/x/cfg", HOME: "/home/a" }, want: "/x/cfg/modelgate" },
  { name: "falls back to ~/.config", env: { HOME: "/home/a" }, want: "/home/a/.config/modelgate" },
  {
    name: "ignores a relative XDG_CONFIG_HOME",
    env: { XDG_CONFIG_HOME: "cfg", HOME: "/home/a" },
    want: "/home/a/.config/modelgate",
  },
  {
    name: "takes USERPROFILE without HOME",
    env: { USERPROFILE: "C:\\Users\\a" },
    want: "C:\\Users\\a/.config/modelgate",
  },
];
for (const c of PATHS) {
  Deno.test(`credentialsPath() ${c.name}`, () => {
    assert.equal(credentialsPath((n) => c.env[n]), `${c.want}/credentials.json`);
  });
}

Deno.test("credentialsPath() without HOME or XDG_CONFIG_HOME says what to set", () => {
  assert.throws(() => credentialsPath(() => undefined), /set HOME or XDG_CONFIG_HOME/);
});

const ROOTS = [
  { input: "https://gw.example.com", want: "https://gw.example.com" },
  { input: "https://gw.example.com/", want: "https://gw.example.com" },
  { input: "https://gw.example.com/v1/", want: "https://gw.example.com" },
  { input: "http://127.0.0.1:8787/team/", want: "http://127.0.0.1:8787/team" },
];
for (const c of ROOTS) {
  Deno.test(`gatewayRoot() makes ${c.input} a root without /v1 or a trailing slash`, () => {
    assert.equal(gatewayRoot(c.input), c.want);
  });
}

Deno.test("gatewayRoot() refuses what is not an http(s) URL, naming the flag", () => {
  assert.throws(() => gatewayRoot("gw.example.com"), /--gateway must be the gateway's URL/);
  assert.throws(() => gatewayRoot("ftp://gw.example.com"), /--gateway must be an http or https URL/);
});

Deno.test("runEnvironment() sets the Anthropic and OpenAI variables and leaves ANTHROPIC_API_KEY out", () => {
  const env = runEnvironment(LOGIN, { PATH: "/bin", ANTHROPIC_API_KEY: "a-personal-key", OPENAI_API_KEY: "old" });
  assert.deepEqual(env, {
    PATH: "/bin",
    ANTHROPIC_BASE_URL: "https://gw.example.com",
    ANTHROPIC_AUTH_TOKEN: "sk-person-secret",
    OPENAI_BASE_URL: "https://gw.example.com/v1",
    OPENAI_API_KEY: "sk-person-secret",
  });
});

const CODEX_FLAGS = [
  "-c",
  'model_provider="modelgate"',
  "-c",
  'model_providers.modelgate.name="modelgate"',
  "-c",
  'model_providers.modelgate.base_url="https://gw.example.com/v1"',
  "-c",
  'model_providers.modelgate.env_key="OPENAI_API_KEY"',
  "-c",
  'model_providers.modelgate.wire_api="responses"',
];
const CODEX_MCP = [
  "-c",
  'mcp_servers.modelgate.url="https://gw.example.com/mcp"',
  "-c",
  'mcp_servers.modelgate.bearer_token_env_var="OPENAI_API_KEY"',
];
const CLAUDE_MCP = [
  "--mcp-config",
  '{"mcpServers":{"modelgate":{"type":"http","url":"https://gw.example.com/mcp",' +
  '"headers":{"Authorization":"Bearer ${ANTHROPIC_AUTH_TOKEN}"}}}}',
];
const ARGUMENTS = [
  { command: "codex", args: ["exec", "hi"], want: [...CODEX_FLAGS, ...CODEX_MCP, "exec", "hi"] },
  { command: "/usr/local/bin/codex", args: [], want: [...CODEX_FLAGS, ...CODEX_MCP] },
  { command: "C:\\tools\\Codex.exe", args: ["-m", "x"], want: [...CODEX_FLAGS, ...CODEX_MCP, "-m", "x"] },
  { command: "codex", args: ["exec"], mcp: false, want: [...CODEX_FLAGS, "exec"] },
  // Last, so a prompt after the options is not taken for a second config.
  { command: "claude", args: ["-p", "hi"], want: ["-p", "hi", ...CLAUDE_MCP] },
  { command: "/opt/bin/claude", args: [], want: CLAUDE_MCP },
  { command: "claude", args: ["mcp", "list"], want: ["mcp", "list"] },
  { command: "claude", args: ["-p", "hi"], mcp: false, want: ["-p", "hi"] },
  { command: "codex-helper", args: ["a"], want: ["a"] },
];
for (const c of ARGUMENTS) {
  Deno.test(`runArguments() for ${c.command} ${c.args.join(" ")}${c.mcp === false ? " --no-mcp" : ""}`, () => {
    assert.deepEqual(runArguments(c.command, c.args, LOGIN, { mcp: c.mcp }), c.want);
  });
}

Deno.test("parseArgs() keeps everything after -- as another program's command line", () => {
  assert.deepEqual(parseArgs(["run", "--", "claude", "--model", "x", "--help"]), {
    words: ["run"],
    flags: {},
    rest: ["claude", "--model", "x", "--help"],
  });
  assert.deepEqual(parseArgs(["token", "list", "--json"]), { words: ["token", "list"], flags: { json: true } });
});

const WARNINGS = [
  { root: "http://gw.example.com", warns: true },
  { root: "https://gw.example.com", warns: false },
  { root: "http://127.0.0.1:8787", warns: false },
  { root: "http://localhost:8787", warns: false },
  { root: "http://[::1]:8787", warns: false },
];
for (const c of WARNINGS) {
  Deno.test(`plainHttpWarning() ${c.warns ? "warns" : "is quiet"} for ${c.root}`, () => {
    const warning = plainHttpWarning(c.root);
    if (c.warns) assert.match(warning ?? "", /is plain http, so the token will cross the network unencrypted/);
    else assert.equal(warning, undefined);
  });
}

Deno.test("invokedAs() names the command that starts the CLI again from where the person is", () => {
  const task = "deno/2.9.6 npm/? deno/2.9.6 linux x86_64";
  const NPX = "npm/11.19.1 node/v20.20.2 linux x64 workspaces/false";
  const cases: [Record<string, string>, string, string][] = [
    [{}, "/home/ada/.deno/bin/deno", "modelgate"],
    [{ npm_config_user_agent: task }, "/usr/local/bin/deno", "deno task cli"],
    [{ npm_config_user_agent: task }, "/home/ada/.npm/_npx/1a2b/node_modules/deno/deno", "npx -y deno@2.9.6 task cli"],
    // Under npx, deno task keeps the user agent npx set: the path alone says where Deno came from.
    [{ npm_config_user_agent: NPX }, "/home/ada/.npm/_npx/1a2b/node_modules/deno/deno", "npx -y deno@2.9.6 task cli"],
    // npm alone (not deno task) is not a checkout's task.
    [{ npm_config_user_agent: "npm/10.9.2 node/v22.12.0 linux x64" }, "/usr/bin/deno", "modelgate"],
    [{}, "/home/ada/.local/bin/modelgate", "modelgate"],
    [{}, "/opt/tools/mg", "mg"],
    [{}, "C:\\Users\\ada\\bin\\modelgate.exe", "modelgate"],
  ];
  for (const [env, execPath, want] of cases) assert.equal(invokedAs((n) => env[n], execPath, "2.9.6"), want, execPath);
});

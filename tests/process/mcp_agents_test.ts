/**
 * @module The real Claude Code and Codex calling a tool of an MCP server through the gateway's /mcp, in an agent loop
 * whose model the gateway also serves (a scripted model on 127.0.0.1): configured as docs/mcp.md says, and through
 * `modelgate run --`. They run when MODELGATE_CLAUDE_CODE and MODELGATE_CODEX name the executables
 * (`npm install @anthropic-ai/claude-code @openai/codex`), and are skipped otherwise.
 */
import assert from "node:assert/strict";
import { agentOutput } from "../_agent_cli.ts";
import { claudeCodeEnv } from "../_claude_code.ts";
import { CODEX_EXEC, codexProvider, writeCodexConfig } from "../_codex.ts";
import { type FakeUpstream, fakeUpstream } from "../_fake_upstream.ts";
import { mcpEnv } from "../_mcp_gateway.ts";
import { type FakeMcpServer, startMcpHttpServer } from "../_mcp_servers.ts";
import { scriptedModel } from "../_scripted_model.ts";
import { startGateway, type TestGateway } from "../_helpers.ts";
import { optIn, ROOT } from "../_process.ts";

const CLAUDE = Deno.env.get("MODELGATE_CLAUDE_CODE");
const CODEX = Deno.env.get("MODELGATE_CODEX");

/** What one agent run gets: a folder for its home, the model, the MCP server, the gateway and a token. */
interface Setup {
  dir: string;
  upstream: FakeUpstream;
  docs: FakeMcpServer;
  gw: TestGateway;
  token: string;
}

/** The model: call the docs server's search through the gateway, then answer. */
const SCRIPT = [{ tool: "docs_search", args: { query: "launch code" } }, { text: "The search is done." }];

async function withSetup(run: (setup: Setup) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-mcp-agent-" });
  try {
    await using upstream = fakeUpstream();
    const model = scriptedModel(SCRIPT);
    upstream.routes.set("POST /anth/v1/messages", model.anthropic);
    upstream.routes.set("POST /oai/v1/chat/completions", model.chat);
    await using docs = startMcpHttpServer();
    await using gw = await startGateway(upstream.url, {
      extraYaml: `mcp_servers:\n  - { name: docs, url: "${docs.url}", headers: { Authorization: DOCS_AUTH } }\n`,
      extraGroups: "  - { name: agents, listing: auto, models: [claude-test, gpt-test], mcp: { docs: [search] } }\n",
      env: mcpEnv(),
    });
    const token = (await gw.store.createToken({ group: "agents", owner: "ada@example.com" })).secret;
    await run({ dir, upstream, docs, gw, token });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs a command for an agent in the set-up's folder as its home, for up to three minutes; its stdout. */
function agent(command: string[], setup: Setup, env: Record<string, string>): Promise<string> {
  return agentOutput(command, { dir: setup.dir, env, timeoutMs: 180_000 });
}

/** The loop went through the gateway both ways: the tool was called on the docs server, its result reached the model. */
function assertToolLoop(setup: Setup): void {
  assert.ok(setup.docs.seen.includes("tools/call search"), `the docs server saw: ${setup.docs.seen.join(", ")}`);
  const fed = setup.upstream.requests.some((r) => JSON.stringify(r.body ?? {}).includes("found: launch code"));
  assert.ok(fed, "the tool's result went back to the model");
  const call = setup.gw.exchanges.find((e) => e.mcp?.method === "tools/call" && e.mcp.name === "search");
  assert.equal(call?.mcp?.outcome, "ok");
  assert.equal(call?.owner, "ada@example.com");
}

/** The module cache of this process, so the `modelgate run` process downloads nothing under its own home. */
const DENO_DIR = Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`;

/** `modelgate run` signed in to the gateway: a credentials file where `login` keeps it; its command line. */
async function signedIn(setup: Setup): Promise<string[]> {
  await Deno.mkdir(`${setup.dir}/.config/modelgate`, { recursive: true });
  await Deno.writeTextFile(
    `${setup.dir}/.config/modelgate/credentials.json`,
    JSON.stringify({
      gateway: setup.gw.url,
      token: setup.token,
      token_id: "tok_agent",
      owner: "ada@example.com",
      group: "agents",
      expires_at: null,
    }),
  );
  return [Deno.execPath(), "run", "-A", "--config", `${ROOT}deno.json`, `${ROOT}main.ts`, "run", "--"];
}

const CLAUDE_ENV = claudeCodeEnv("claude-test");
const CLAUDE_PROMPT = ["-p", "Search the team docs for the launch code.", "--model", "claude-test"];
const CLAUDE_TOOLS = ["--allowedTools", "mcp__modelgate__docs_search"];

Deno.test({
  ...optIn(
    "Claude Code, its MCP server added as docs/mcp.md says, calls a tool through the gateway",
    "MODELGATE_CLAUDE_CODE",
    "Claude Code's executable",
  ),
  async fn() {
    await withSetup(async (setup) => {
      const env = { ...CLAUDE_ENV, ANTHROPIC_BASE_URL: setup.gw.url, ANTHROPIC_AUTH_TOKEN: setup.token };
      await agent(
        [
          CLAUDE!,
          "mcp",
          "add",
          "--scope",
          "user",
          "--transport",
          "http",
          "modelgate",
          `${setup.gw.url}/mcp`,
          "--header",
          `Authorization: Bearer ${setup.token}`,
        ],
        setup,
        env,
      );
      const text = await agent([CLAUDE!, ...CLAUDE_PROMPT, ...CLAUDE_TOOLS], setup, env);
      assert.match(text, /The search is done/);
      assertToolLoop(setup);
    });
  },
});

Deno.test({
  ...optIn(
    "Claude Code run by `modelgate run --` has the gateway's MCP endpoint with the person's token",
    "MODELGATE_CLAUDE_CODE",
    "Claude Code's executable",
  ),
  async fn() {
    await withSetup(async (setup) => {
      const run = await signedIn(setup);
      const text = await agent([...run, CLAUDE!, ...CLAUDE_PROMPT, ...CLAUDE_TOOLS], setup, {
        ...CLAUDE_ENV,
        DENO_DIR,
      });
      assert.match(text, /The search is done/);
      assertToolLoop(setup);
    });
  },
});

/** Codex's config as docs/mcp.md gives it: the gateway as the model provider and as an MCP server. */
async function codexConfig(setup: Setup, mcp: boolean): Promise<void> {
  const provider = `model = "gpt-test"\n${codexProvider(setup.gw.url)}`;
  const server = `\n[mcp_servers.modelgate]\nurl = "${setup.gw.url}/mcp"\nbearer_token_env_var = "MODELGATE_TOKEN"\n`;
  await writeCodexConfig(setup.dir, provider + (mcp ? server : ""));
}

const CODEX_PROMPT = [...CODEX_EXEC, "Search the team docs for the launch code."];

Deno.test({
  ...optIn(
    "Codex, its MCP server configured as docs/mcp.md says, calls a tool through the gateway",
    "MODELGATE_CODEX",
    "Codex's executable",
  ),
  async fn() {
    await withSetup(async (setup) => {
      await codexConfig(setup, true);
      const env = { CODEX_HOME: `${setup.dir}/.codex`, MODELGATE_TOKEN: setup.token };
      const text = await agent([CODEX!, ...CODEX_PROMPT], setup, env);
      assert.match(text, /The search is done/);
      assertToolLoop(setup);
    });
  },
});

Deno.test({
  ...optIn(
    "Codex run by `modelgate run --` has the gateway as its model provider and its MCP server",
    "MODELGATE_CODEX",
    "Codex's executable",
  ),
  async fn() {
    await withSetup(async (setup) => {
      await writeCodexConfig(setup.dir, 'model = "gpt-test"\n');
      const run = await signedIn(setup);
      const env = { CODEX_HOME: `${setup.dir}/.codex`, DENO_DIR };
      const text = await agent([...run, CODEX!, ...CODEX_PROMPT], setup, env);
      assert.match(text, /The search is done/);
      assertToolLoop(setup);
    });
  },
});

/**
 * @module The real Claude Code and Codex finishing a tool loop on the demo model of the example config, with no provider
 * key set, configured as docs/clients.md says: the demo model calls one of their tools (it lists the folder) and then
 * quotes what the tool gave back. They run when MODELGATE_CLAUDE_CODE and MODELGATE_CODEX name the executables
 * (`npm install @anthropic-ai/claude-code @openai/codex`), and are skipped otherwise.
 */
import assert from "node:assert/strict";
import { runAgent } from "../_agent_cli.ts";
import { claudeCodeEnv } from "../_claude_code.ts";
import { codexExec, codexProvider } from "../_codex.ts";
import { startGateway, type TestGateway } from "../_helpers.ts";
import { optIn, ROOT } from "../_process.ts";

const CLAUDE = Deno.env.get("MODELGATE_CLAUDE_CODE");
const CODEX = Deno.env.get("MODELGATE_CODEX");
const MODEL = "demo-model";

/** A folder with one file for the agent to find, and the example config's gateway. */
async function withDemo(
  run: (dir: string, gw: TestGateway) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-demo-agent-" });
  try {
    await Deno.writeTextFile(
      `${dir}/notes.txt`,
      "The launch code is PLUM-42.\n",
    );
    const configYaml = await Deno.readTextFile(
      `${ROOT}config/gateway.example.yaml`,
    );
    await using gw = await startGateway("", { configYaml });
    await run(dir, gw);
    // The loop went through the gateway: a turn that called the tool, and one that had its result.
    const bodies = gw.exchanges.filter((e) => e.model === MODEL && e.status === 200);
    assert.ok(
      bodies.length >= 2,
      `the demo model answered ${bodies.length} requests`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  ...optIn(
    "Claude Code finishes a tool loop on the demo model",
    "MODELGATE_CLAUDE_CODE",
    "Claude Code's executable",
  ),
  async fn() {
    await withDemo(async (dir, gw) => {
      const out = await runAgent([
        CLAUDE!,
        "-p",
        "What files are in this folder?",
        "--model",
        MODEL,
      ], {
        dir,
        env: {
          ANTHROPIC_BASE_URL: gw.url,
          ANTHROPIC_AUTH_TOKEN: gw.tokens.default,
          ...claudeCodeEnv(MODEL),
        },
      });
      assert.equal(out.code, 0, `${out.stdout}\n${out.stderr.slice(-3000)}`);
      assert.match(
        out.stdout,
        /^\w+ answered: ".*notes\.txt.*"\. That was the demo model's whole tool loop/m,
      );
    });
  },
});

Deno.test({
  ...optIn(
    "Codex finishes a tool loop on the demo model, on a provider of its own",
    "MODELGATE_CODEX",
    "Codex",
  ),
  async fn() {
    await withDemo(async (dir, gw) => {
      const config = `model = "${MODEL}"\n${codexProvider(gw.url)}`;
      const prompt = "What files are in this folder?";
      const out = await codexExec(CODEX!, {
        dir,
        config,
        token: gw.tokens.default,
        prompt,
      });
      assert.match(
        out,
        /answered: ".*notes\.txt.*"\. That was the demo model's whole tool loop/,
      );
    });
  },
});

Deno.test({
  ...optIn(
    "Codex finishes a tool loop on the demo model, on its built-in provider's socket",
    "MODELGATE_CODEX",
    "Codex",
  ),
  async fn() {
    await withDemo(async (dir, gw) => {
      const config = `model = "${MODEL}"\nopenai_base_url = "${gw.url}/v1"\n`;
      const prompt = "What files are in this folder?";
      const out = await codexExec(CODEX!, {
        dir,
        config,
        token: gw.tokens.default,
        prompt,
      });
      assert.match(
        out,
        /answered: ".*notes\.txt.*"\. That was the demo model's whole tool loop/,
      );
      assert.ok(
        gw.exchanges.some((e) => e.transport === "websocket"),
        "Codex used the Responses socket",
      );
    });
  },
});

/**
 * @module The real Claude Code run once, non-interactively, through a test gateway: asked to read `notes.txt` in a
 * fresh folder with its Read tool, on one model for everything (its small model too), in a clean environment.
 */
import { type AgentRun, runAgent } from "./_agent_cli.ts";

/** Claude Code's environment for a test run: `model` for its small model too, and no traffic but the model's. */
export function claudeCodeEnv(model: string): Record<string, string> {
  return {
    ANTHROPIC_SMALL_FAST_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
  };
}

/** Runs `cli` in `dir` against the gateway at `url` with `token`, on `model`; it gives up after two minutes. */
export function runClaudeCode(
  cli: string,
  { dir, url, token, model }: { dir: string; url: string; token: string; model: string },
): Promise<AgentRun> {
  const prompt = `Read ${dir}/notes.txt and tell me what it says.`;
  return runAgent([cli, "-p", prompt, "--model", model, "--allowedTools", "Read"], {
    dir,
    env: { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: token, ...claudeCodeEnv(model) },
  });
}

/**
 * @module The real Claude Code run once, non-interactively, through a test gateway: asked to read `notes.txt` in a
 * fresh folder with its Read tool, on one model for everything (its small model too), in a clean environment.
 */

/** What one run printed, and how it ended. */
export interface ClaudeCodeRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cli` in `dir` against the gateway at `url` with `token`, on `model`; it gives up after two minutes. */
export async function runClaudeCode(
  cli: string,
  { dir, url, token, model }: { dir: string; url: string; token: string; model: string },
): Promise<ClaudeCodeRun> {
  const out = await new Deno.Command(cli, {
    args: ["-p", `Read ${dir}/notes.txt and tell me what it says.`, "--model", model, "--allowedTools", "Read"],
    cwd: dir,
    clearEnv: true,
    env: {
      HOME: dir,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_API_KEY: token,
      ANTHROPIC_SMALL_FAST_MODEL: model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
    },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

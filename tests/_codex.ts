/**
 * @module The real Codex CLI run once, non-interactively (`codex exec`), through a test gateway: in a fresh home whose
 * `config.toml` the test writes, with the gateway's token as both the built-in provider's key (`CODEX_API_KEY`) and a
 * provider of its own's (`MODELGATE_TOKEN`), in a clean environment.
 */
import assert from "node:assert/strict";

/** Runs `codex exec PROMPT` in `dir` with `config` as its config.toml; its stdout, or the test fails with its output. */
export async function codexExec(
  cli: string,
  { dir, config, token, prompt }: { dir: string; config: string; token: string; prompt: string },
): Promise<string> {
  await Deno.mkdir(`${dir}/.codex`, { recursive: true });
  await Deno.writeTextFile(`${dir}/.codex/config.toml`, config);
  const out = await new Deno.Command(cli, {
    args: ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt],
    cwd: dir,
    clearEnv: true,
    env: {
      HOME: dir,
      CODEX_HOME: `${dir}/.codex`,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      CODEX_API_KEY: token,
      MODELGATE_TOKEN: token,
    },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, `${text}\n${new TextDecoder().decode(out.stderr).slice(-3000)}`);
  return text;
}

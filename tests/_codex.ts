/**
 * @module The real Codex CLI run once, non-interactively (`codex exec`), through a test gateway: in a fresh home whose
 * `config.toml` the test writes, with the gateway's token as both the built-in provider's key (`CODEX_API_KEY`) and a
 * provider of its own's (`MODELGATE_TOKEN`), in a clean environment.
 */
import { agentOutput } from "./_agent_cli.ts";

/**
 * The lines of a Codex config.toml that make the gateway at `url` its model provider `id` (shown as `name`), over the
 * Responses API with the key in MODELGATE_TOKEN; `extra` lines go in the provider's table.
 */
export function codexProvider(
  url: string,
  { id = "modelgate", name = id, extra = "" }: { id?: string; name?: string; extra?: string } = {},
): string {
  return `model_provider = "${id}"\n\n[model_providers.${id}]\nname = "${name}"\nbase_url = "${url}/v1"\n` +
    `env_key = "MODELGATE_TOKEN"\nwire_api = "responses"\n${extra}`;
}

/** Writes `config` as the config.toml of Codex's home under `dir` (CODEX_HOME, `${dir}/.codex`). */
export async function writeCodexConfig(dir: string, config: string): Promise<void> {
  await Deno.mkdir(`${dir}/.codex`, { recursive: true });
  await Deno.writeTextFile(`${dir}/.codex/config.toml`, config);
}

/** `codex exec` outside a git repository, running its commands unasked; the prompt follows. */
export const CODEX_EXEC = ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"];

/** Runs `codex exec PROMPT` in `dir` with `config` as its config.toml; its stdout, or the test fails with its output. */
export async function codexExec(
  cli: string,
  { dir, config, token, prompt }: { dir: string; config: string; token: string; prompt: string },
): Promise<string> {
  await writeCodexConfig(dir, config);
  return await agentOutput([cli, ...CODEX_EXEC, prompt], {
    dir,
    env: { CODEX_HOME: `${dir}/.codex`, CODEX_API_KEY: token, MODELGATE_TOKEN: token },
  });
}

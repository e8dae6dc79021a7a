/**
 * @module How the person started this CLI, so that the command it tells them to run next works from where they are:
 * the installed `modelgate`, a compiled executable under its own name, or `deno task cli` in a checkout (through npx
 * when Deno itself came from npx, as on a machine with only Node).
 */

/** What `deno task` sets in the environment of the command it runs (as npm does, with Deno's name first). */
const TASK_AGENT = /^deno\//;

/**
 * The words that start this CLI again, from the environment, the path of the running executable and Deno's version.
 * A script installed with `deno install` (`modelgate`) or main.ts run by hand cannot be told apart: both are `modelgate`.
 */
export function invokedAs(env: (name: string) => string | undefined, execPath: string, denoVersion: string): string {
  const executable = execPath.split(/[\\/]/).pop()?.replace(/\.exe$/i, "") ?? "";
  if (executable !== "deno" && executable !== "") return executable;
  // Deno from npx runs only in a checkout, where the task works. Its path says so: `deno task` under npx keeps npm's
  // user agent in the environment, so that cannot.
  if (/[\\/]_npx[\\/]/.test(execPath)) return `npx -y deno@${denoVersion} task cli`;
  return TASK_AGENT.test(env("npm_config_user_agent") ?? "") ? "deno task cli" : "modelgate";
}

/** {@linkcode invokedAs} for this process; `modelgate` when the executable's path may not be read. */
export function thisProgram(env: (name: string) => string | undefined): string {
  let execPath = "";
  try {
    execPath = Deno.execPath();
  } catch {
    return "modelgate";
  }
  return invokedAs(env, execPath, Deno.version.deno);
}

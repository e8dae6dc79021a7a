/**
 * @module A real agent CLI run once to its end for a test: in a fresh folder that is its home, with nothing of this
 * process's environment but PATH, its output read, and given up on after a deadline.
 */
import assert from "node:assert/strict";

/** What one run printed, and how it ended. */
export interface AgentRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `command` in `dir`, its home, with PATH and `env`; it gives up after `timeoutMs` (two minutes). */
export async function runAgent(
  command: string[],
  { dir, env, timeoutMs = 120_000 }: { dir: string; env: Record<string, string>; timeoutMs?: number },
): Promise<AgentRun> {
  const [program, ...args] = command;
  const out = await new Deno.Command(program, {
    args,
    cwd: dir,
    clearEnv: true,
    env: { HOME: dir, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** {@linkcode runAgent}, its stdout; the test fails with its output unless it exited 0. */
export async function agentOutput(command: string[], options: Parameters<typeof runAgent>[1]): Promise<string> {
  const out = await runAgent(command, options);
  assert.equal(out.code, 0, `${out.stdout}\n${out.stderr.slice(-3000)}`);
  return out.stdout;
}

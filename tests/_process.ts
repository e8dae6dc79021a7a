/** @module Running the real `main.ts` as a child process in tests: start, read its port, signal and await it. */

const ROOT = new URL("..", import.meta.url).pathname;

/** A running `main.ts serve`. */
export interface GatewayProcess extends AsyncDisposable {
  url: string;
  child: Deno.ChildProcess;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/** Environment for a child: the variables Deno needs to find its cache, plus `extra`. */
export function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Runs a `main.ts` CLI command to completion. */
export async function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "main.ts", ...args],
    cwd: ROOT,
    env: childEnv(env),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}

/** Starts `main.ts serve --config <file>` and resolves once it listens. */
export async function startProcess(configFile: string, env: Record<string, string>): Promise<GatewayProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "main.ts", "serve", "--config", configFile],
    cwd: ROOT,
    env: childEnv(env),
    clearEnv: true,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let url: string | undefined;
  while (url === undefined) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`gateway exited before listening:\n${text}`);
    text += value;
    url = /listening on (http:\/\/\S+)/.exec(text)?.[1];
  }
  const drained = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
  })();
  let exited: Promise<number> | undefined;
  const stop = (signal: Deno.Signal = "SIGTERM") => {
    if (!exited) {
      child.kill(signal);
      exited = Promise.all([child.status, drained]).then(([status]) => status.code);
    }
    return exited;
  };
  return {
    url,
    child,
    stderr: () => text,
    stop,
    async [Symbol.asyncDispose]() {
      await stop();
    },
  };
}

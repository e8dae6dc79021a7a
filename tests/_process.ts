/** @module Processes for tests: `main.ts` run as a child with its own permissions, stopped by pid; measuring runs. */

/** The repository root, where deno.json (imports, unstable KV) is found. */
export const ROOT = new URL("../", import.meta.url).pathname;

/** A running gateway process. */
export interface GatewayProcess extends AsyncDisposable {
  url: string;
  pid: number;
  /** Lines written to stdout so far (the log). */
  stdout: string[];
  /** Lines written to stderr so far. */
  stderr: string[];
  /** Sends SIGTERM and waits for the exit; returns the exit code. */
  stop(): Promise<number>;
}

/** Options for {@linkcode startProcess}. */
export interface StartOptions {
  /** The command, e.g. [execPath, "run", ...flags, "main.ts", "serve"], or a compiled binary and its args. */
  command: string[];
  env: Record<string, string>;
  /** Give up waiting for the listen line after this long. */
  timeoutMs?: number;
}

/** Reads a process's output into `lines`, calling `onLine` with each whole line as it arrives. */
export async function pump(stream: ReadableStream<Uint8Array>, lines: string[], onLine: (line: string) => void) {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop() ?? "";
    for (const line of parts) {
      lines.push(line);
      onLine(line);
    }
  }
  if (rest) lines.push(rest);
}

/** How long a gateway may take to exit once told to stop. */
const EXIT_DEADLINE_MS = 30_000;

/** Starts a gateway and resolves once it prints its listen address (port 0 picks a free port). */
export async function startProcess(options: StartOptions): Promise<GatewayProcess> {
  const [program, ...args] = options.command;
  const child = new Deno.Command(program, {
    args,
    cwd: ROOT,
    env: options.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout: string[] = [];
  const stderr: string[] = [];
  const listening = Promise.withResolvers<string>();
  const pumps = Promise.all([
    pump(child.stdout, stdout, () => {}),
    pump(child.stderr, stderr, (line) => {
      const match = /listening on (http:\/\/\S+)/.exec(line);
      if (match) listening.resolve(match[1]);
    }),
  ]);
  const exited = child.status.then((status) => {
    listening.reject(new Error(`Gateway exited with ${status.code} before listening:\n${stderr.join("\n")}`));
    return status.code;
  });
  const timer = setTimeout(
    () => listening.reject(new Error(`Gateway did not listen in time:\n${stderr.join("\n")}`)),
    options.timeoutMs ?? 30_000,
  );
  let stopped: Promise<number> | undefined;
  // A gateway that does not exit after its grace period (the tests' longest is 8 s) fails its test instead of hanging
  // the suite: it is killed, and the stop throws with what it printed.
  const stop = () =>
    stopped ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already exited.
      }
      let late: ReturnType<typeof setTimeout> | undefined;
      const hung = new Promise<"hung">((resolve) => late = setTimeout(() => resolve("hung"), EXIT_DEADLINE_MS));
      const code = await Promise.race([exited, hung]).finally(() => clearTimeout(late));
      if (code === "hung") {
        child.kill("SIGKILL");
        await exited;
        await pumps;
        throw new Error(
          `Gateway did not exit within ${EXIT_DEADLINE_MS} ms of SIGTERM:\n${stderr.slice(-20).join("\n")}`,
        );
      }
      await pumps;
      return code;
    })();
  let url: string;
  try {
    url = (await listening.promise).replace("0.0.0.0", "127.0.0.1");
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return { url, pid: child.pid, stdout, stderr, stop, [Symbol.asyncDispose]: async () => void await stop() };
}

/**
 * Runs a command to its end and returns its exit code and output. Every command here should end on its own (a CLI
 * call, a refused start); one that does not is killed at `deadlineMs` (two minutes unless given), so its test fails
 * rather than hangs the suite.
 */
export async function runCommand(
  command: string[],
  env: Record<string, string>,
  deadlineMs = 120_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const [program, ...args] = command;
  const signal = AbortSignal.timeout(deadlineMs);
  const output = await new Deno.Command(program, { args, cwd: ROOT, env, stdin: "null", signal }).output();
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}

/** `deno run` of main.ts with `deno task start`'s permissions, narrowed to loopback and writes under `writeDir`. */
export function denoMain(writeDir: string, ...args: string[]): string[] {
  return [
    Deno.execPath(),
    "run",
    "--allow-net=127.0.0.1",
    "--allow-env",
    "--allow-read",
    `--allow-write=${writeDir}`,
    "main.ts",
    ...args,
  ];
}

/** A config on port 0 whose only upstream (key in TEST_UP_KEY) is never called; without `kvPath`, KV is in memory. */
export function processConfigYaml(kvPath = ":memory:"): string {
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(kvPath)}
upstreams:
  - { name: up, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: TEST_UP_KEY, models: [m1] }
groups:
  - { name: default, listing: anthropic, models: [m1] }
`;
}

/**
 * Creates a token in `group` with the CLI, as an operator would, with `flags` such as limits; returns its secret and
 * its id.
 */
export async function cliToken(
  writeDir: string,
  configFile: string,
  env: Record<string, string>,
  group = "default",
  flags: string[] = [],
): Promise<{ token: string; tokenId: string }> {
  const created = await runCommand(
    denoMain(writeDir, "token", "create", "--group", group, ...flags, "--config", configFile),
    env,
  );
  if (created.code !== 0) throw new Error(`token create failed:\n${created.stderr}`);
  const tokenId = /Created token (tok_[0-9a-f]+)/.exec(created.stderr)?.[1];
  if (!tokenId) throw new Error(`token create named no token id:\n${created.stderr}`);
  return { token: created.stdout.trim(), tokenId };
}

/**
 * The name and `ignore` of a test that runs only when the variable `variable` turns it on (`on` says whether its value
 * does, by default any non-empty one). Deno prints no reason for an ignored test, so while it is ignored its name says
 * what to set: `(skipped: set VARIABLE to <what> to run it)`.
 */
export function optIn(
  name: string,
  variable: string,
  what: string,
  on: (value: string | undefined) => boolean = Boolean,
): { name: string; ignore: boolean } {
  const ignore = !on(Deno.env.get(variable));
  return { name: ignore ? `${name} (skipped: set ${variable} to ${what} to run it)` : name, ignore };
}

/**
 * Runs `script` (a test's measuring child) with the collector exposed and `args`, within two minutes; fails with its
 * stderr when it fails, and answers the JSON of the last line it printed.
 */
export async function measuringChild(script: URL, args: string[] = []): Promise<Record<string, unknown>> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--expose-gc",
      "--allow-net=127.0.0.1",
      "--allow-env",
      "--allow-read",
      script.pathname,
      ...args,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  });
  const output = await child.output();
  if (!output.success) throw new Error(`${script.pathname} failed:\n${new TextDecoder().decode(output.stderr)}`);
  return JSON.parse(new TextDecoder().decode(output.stdout).trim().split("\n").at(-1)!);
}

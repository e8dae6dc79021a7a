/** @module The CLI under test: a config file and a KV file in a fresh folder, and command lines run against them. */
import { parseArgs } from "../src/cli/args.ts";
import type { Io } from "../src/cli/args.ts";
import { runCli } from "../src/cli/commands.ts";
import { type GatewayOptions, testConfigYaml, UPSTREAM_KEYS } from "./_helpers.ts";

/** A config file (the test config with `options`) and a KV file, and a `cli()` that runs a command line on them. */
export async function cliSetup(upstreamUrl: string, options: GatewayOptions = {}) {
  const dir = await Deno.makeTempDir({ prefix: "modelgate_cli_" });
  const config = `${dir}/gateway.yaml`;
  const kvPath = `${dir}/kv.sqlite`;
  await Deno.writeTextFile(config, testConfigYaml(upstreamUrl, options));
  const env: Record<string, string> = { ...UPSTREAM_KEYS, MODELGATE_KV: kvPath };
  /** How many times a command said its KV was open. */
  let opened = 0;
  /** Runs one command line, given as words separated by single spaces. */
  async function cli(line: string): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (t: string) => out.push(t),
      err: (t: string) => err.push(t),
      env: (n: string) => env[n],
      onKvOpen: () => void opened++,
    };
    const code = await runCli(parseArgs([...line.split(" "), "--config", config]), io);
    return { code, out: out.join("\n"), err: err.join("\n") };
  }
  return {
    dir,
    /** The command's environment; a test may change it between commands. */
    env,
    kvPath,
    opened: () => opened,
    cli,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** What one run of the person's side of the CLI did. */
export interface PersonRun {
  code: number;
  out: string;
  err: string;
}

/**
 * The person's side of the CLI (login, run, logout) as `deno task cli` runs it, in a fresh config home:
 * XDG_CONFIG_HOME and HOME are a temporary folder, so nothing touches the real user's login.
 */
export async function personSetup() {
  const dir = await Deno.makeTempDir({ prefix: "modelgate_person_" });
  const env: Record<string, string> = { XDG_CONFIG_HOME: `${dir}/config`, HOME: `${dir}/home` };
  /**
   * Runs one command line; `onErr` sees each line the command writes for the person as it is written, and `seams`
   * gives it a clock and a wait of the test's.
   */
  async function cli(
    argv: string[],
    onErr: (line: string) => void = () => {},
    seams: Pick<Io, "now" | "sleep"> = {},
  ): Promise<PersonRun> {
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (t: string) => out.push(t),
      err: (t: string) => {
        err.push(t);
        for (const line of t.split("\n")) onErr(line);
      },
      env: (n: string) => env[n],
      // A command `run` starts sees the test's environment with the person's config home.
      environment: () => ({ ...Deno.env.toObject(), ...env }),
      ...seams,
    };
    const code = await runCli(parseArgs(argv), io);
    return { code, out: out.join("\n"), err: err.join("\n") };
  }
  return {
    dir,
    env,
    /** Where the login is kept under this config home. */
    credentials: `${dir}/config/modelgate/credentials.json`,
    cli,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * The name the CLI gives itself in its advice, for a test whose environment would make it `fallback`: under Deno run
 * through npx (a machine with only Node) always the npx form (the rule is invokedAs()'s unit test).
 */
export function programNamed(fallback: string): string {
  return /[\\/]_npx[\\/]/.test(Deno.execPath()) ? `npx -y deno@${Deno.version.deno} task cli` : fallback;
}

/** `text` as a regular expression's literal part. */
export function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * @module `modelgate run -- COMMAND ...`: runs a command with the saved login in the variables the Anthropic and
 * OpenAI clients read (and Codex's provider settings, and the gateway's MCP endpoint for Claude Code and Codex), its
 * signals passed on and its exit code passed back.
 */
import type { Args, Io } from "./args.ts";
import { type Credentials, credentialsPath, readCredentials } from "./credentials.ts";
import { printable } from "./print.ts";
import { thisProgram } from "./program.ts";

/** The name Codex is given the gateway under, as its own model provider (see docs/clients.md, "Codex CLI"). */
const CODEX_PROVIDER = "modelgate";

/** The name an agent is given the gateway's MCP endpoint under: its tools are `mcp__modelgate__<server>_<tool>`. */
export const MCP_SERVER = "modelgate";

/**
 * The child's environment: the caller's, with the gateway and the token in the variables the Anthropic and OpenAI
 * clients read. ANTHROPIC_API_KEY is left out because Claude Code would send it instead of the token.
 */
export function runEnvironment(credentials: Credentials, base: Record<string, string>): Record<string, string> {
  const env = { ...base };
  delete env.ANTHROPIC_API_KEY;
  return {
    ...env,
    // Claude Code and the Anthropic SDK append /v1/messages to the root themselves.
    ANTHROPIC_BASE_URL: credentials.gateway,
    ANTHROPIC_AUTH_TOKEN: credentials.token,
    OPENAI_BASE_URL: `${credentials.gateway}/v1`,
    OPENAI_API_KEY: credentials.token,
  };
}

/** A command's name without its folder and a Windows extension: what tells a known tool. */
function toolName(command: string): string {
  return command.replace(/^.*[\\/]/, "").replace(/\.(exe|cmd)$/i, "").toLowerCase();
}

/** Claude Code's subcommands, which take no session options: they are run as given. */
const CLAUDE_SUBCOMMANDS = new Set(["mcp", "config", "doctor", "update", "install", "setup-token", "plugin", "auth"]);

/**
 * Claude Code's `--mcp-config` for the gateway's MCP endpoint (see docs/mcp.md, "Claude Code"). The header names the
 * variable that holds the token, which Claude Code expands itself, so the token never appears on a command line.
 */
export function claudeMcpConfig(credentials: Credentials): string {
  const server = {
    type: "http",
    url: `${credentials.gateway}/mcp`,
    headers: { Authorization: "Bearer ${ANTHROPIC_AUTH_TOKEN}" },
  };
  return JSON.stringify({ mcpServers: { [MCP_SERVER]: server } });
}

/**
 * The arguments the command is run with. Codex reads no base URL or key from the environment for its built-in
 * provider in an interactive session (it wants a stored sign-in), so it is given the gateway as a provider of its own
 * through its `-c` overrides, placed first so that the person's own `-c` flags after them still win; the gateway's MCP
 * endpoint is one more `-c`, its token read from the variable named. Claude Code gets the endpoint with `--mcp-config`,
 * placed last: the option takes several values and would take a prompt that followed it for another one.
 */
export function runArguments(
  command: string,
  args: readonly string[],
  credentials: Credentials,
  options: { mcp?: boolean } = {},
): string[] {
  const mcp = options.mcp !== false;
  const tool = toolName(command);
  if (tool === "claude") {
    return mcp && !CLAUDE_SUBCOMMANDS.has(args[0] ?? "")
      ? [...args, "--mcp-config", claudeMcpConfig(credentials)]
      : [...args];
  }
  if (tool !== "codex") return [...args];
  const key = `model_providers.${CODEX_PROVIDER}`;
  const settings: [string, string][] = [
    ["model_provider", CODEX_PROVIDER],
    [`${key}.name`, CODEX_PROVIDER],
    [`${key}.base_url`, `${credentials.gateway}/v1`],
    [`${key}.env_key`, "OPENAI_API_KEY"],
    [`${key}.wire_api`, "responses"],
  ];
  if (mcp) {
    settings.push(
      [`mcp_servers.${MCP_SERVER}.url`, `${credentials.gateway}/mcp`],
      [`mcp_servers.${MCP_SERVER}.bearer_token_env_var`, "OPENAI_API_KEY"],
    );
  }
  return [...settings.flatMap(([name, value]) => ["-c", `${name}=${JSON.stringify(value)}`]), ...args];
}

/**
 * Passes signals on to the child until `stop()`. A terminal sends Ctrl-C and Ctrl-\ to every process of its
 * foreground group, the child included, so from a terminal they are only kept from ending this process (which must
 * stay to pass the exit code back); otherwise, and for a SIGTERM or SIGHUP sent to this process, the child gets them.
 */
function forwardSignals(child: Deno.ChildProcess, fromTerminal: boolean): { stop(): void } {
  const windows = Deno.build.os === "windows";
  const signals: Deno.Signal[] = windows ? ["SIGINT"] : ["SIGINT", "SIGQUIT", "SIGTERM", "SIGHUP"];
  const listeners = signals.map((signal) => {
    const terminal = signal === "SIGINT" || signal === "SIGQUIT";
    const listener = () => {
      if (windows || (terminal && fromTerminal)) return;
      try {
        child.kill(signal);
      } catch {
        // The child has already exited; its status is on its way.
      }
    };
    Deno.addSignalListener(signal, listener);
    return { signal, listener };
  });
  return { stop: () => listeners.forEach(({ signal, listener }) => Deno.removeSignalListener(signal, listener)) };
}

/** Runs `modelgate run -- COMMAND ...`; the command's exit code (128 + the signal's number when one ended it). */
export async function runCommand(args: Args, io: Io, help: string): Promise<number> {
  const [program, ...rest] = args.rest ?? [];
  if (!program) {
    io.err(`modelgate run needs a command after --\n\n${help}`);
    return 2;
  }
  const path = credentialsPath(io.env);
  const credentials = await readCredentials(path);
  if (!credentials) {
    io.err(`Not signed in (no ${path}): run ${thisProgram(io.env)} login --gateway URL first`);
    return 1;
  }
  if (credentials.expires_at && Date.parse(credentials.expires_at) <= (io.now ?? Date.now)()) {
    io.err(
      `The login for ${printable(credentials.gateway)} expired at ${printable(String(credentials.expires_at))}: ` +
        `run ${thisProgram(io.env)} login again`,
    );
    return 1;
  }
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args: runArguments(program, rest, credentials, { mcp: args.flags["no-mcp"] !== true }),
      env: runEnvironment(credentials, io.environment?.() ?? Deno.env.toObject()),
      clearEnv: true,
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
  } catch (err) {
    // The codes a shell gives for a command it cannot find or may not run.
    if (err instanceof Deno.errors.NotFound) {
      io.err(`modelgate run: no command "${printable(program)}" found on PATH`);
      return 127;
    }
    io.err(`modelgate run: cannot run "${printable(program)}": ${err instanceof Error ? err.message : String(err)}`);
    return 126;
  }
  const forwarding = forwardSignals(child, Deno.stdin.isTerminal());
  try {
    return (await child.status).code;
  } finally {
    forwarding.stop();
  }
}

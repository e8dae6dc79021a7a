/** @module The CLI's entry: help for each command, `serve`, and dispatch to the operator commands. */
import { serve } from "../serve/server.ts";
import { spawnWorker, stopSignals, superviseWorkers, workerCount } from "../serve/workers.ts";
import { groupCommand, responseCommand, tokenCommand } from "./admin_commands.ts";
import type { Args, Io } from "./args.ts";
import { auditCommand } from "./audit_command.ts";
import { batchCommand } from "./batch_commands.ts";
import { loginCommand, logoutCommand } from "./login.ts";
import { mcpCommand } from "./mcp_commands.ts";
import { operatorKeyCommand } from "./operator_key_commands.ts";
import { runCommand } from "./run.ts";
import { usageCommand } from "./usage_commands.ts";

const LIMIT_FLAGS = `Limit flags (each optional; a token and its group are both enforced):
  --requests-per-minute N  --tokens-per-minute N  --tokens-per-day N  --tokens-per-month N
  --cost-per-day AMOUNT  --cost-per-month AMOUNT   budgets in the config's currency, e.g. 12.50
  --tool-calls-per-minute N                        calls of MCP tools through /mcp
  --mcp-requests-per-minute N                      every request to /mcp (sessions, listings, calls)`;

const HELP: Record<string, string> = {
  "": `modelgate: a model-access gateway

Usage: modelgate <command> [options]

Commands:
  login --gateway URL         sign in with your team's identity provider; keeps a personal token
  run -- COMMAND [ARGS...]    run a tool (claude, codex, ...) with that token and the gateway's URLs
  logout                      revoke that token and forget it
  serve                       run the gateway
  token create --group G      create a token and print its secret once
  token list|get|update|revoke  see, change or revoke tokens (never their secrets)
  group list|create|update|delete  manage groups: models, listing shape, limits
  usage [--by token] [--since 7d]  usage totals; usage log shows recent requests
  response delete|purge       delete stored Responses: one by id, or all of a token's
  operator-key create|list|revoke  personal admin API keys with a role (owner, admin, viewer)
  audit [--actor A] [--since 7d]  who changed what, newest first
  mcp grants list|revoke      the OAuth grants MCP clients hold on /mcp
  batch list|cancel           every batch (state, counts, owner, models, age); cancel one by id

Every command takes --config PATH (else $MODELGATE_CONFIG_YAML, the whole config; else $MODELGATE_CONFIG; else
config/gateway.yaml; else the example), --help, and --json where it prints data.
KV path: $MODELGATE_KV, else the config's kv_path.`,
  login: `Usage: modelgate login --gateway URL [--group G] [--name N]

Signs you in through the gateway with your team's identity provider: it prints a page to open in a browser, on a
line of its own, and waits while you confirm the code there (Ctrl-C stops). The gateway then gives you a personal
token, in --group G when the rules allow it (else the first group they allow), named --name N; it is kept in
$XDG_CONFIG_HOME/modelgate/credentials.json (else ~/.config/modelgate/credentials.json), readable by you only.
Signing in again replaces the login and revokes its earlier token.`,
  run: `Usage: modelgate run [--no-mcp] -- COMMAND [ARGS...]

Runs COMMAND with the saved login: ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN (Claude Code, the Anthropic SDK),
OPENAI_BASE_URL (ending in /v1) and OPENAI_API_KEY (the OpenAI SDK and compatible tools) are set, ANTHROPIC_API_KEY
is left out, and Codex is given the gateway as its model provider (codex -c ... flags). Claude Code and Codex also get
the gateway's MCP endpoint as the server "modelgate" (claude --mcp-config, codex -c mcp_servers...), the token read
from those variables; --no-mcp leaves it out. Signals reach the command, and its exit code is modelgate's.
Example: modelgate run -- claude`,
  batch: `Usage: modelgate batch list [--limit N] [--json]
       modelgate batch cancel ID [--json]

Lists every batch made through the gateway, newest first, whoever made it: its API, state and request counts as its
protocol names them, the owner (the token's person, else the token's id), its models, the deployment it runs on
("gateway" for one the gateway runs itself) and its age. A batch still running is asked of its deployment, with the
upstream credentials of this environment. cancel cancels one at its deployment, recorded in the audit trail as
batch.cancel; a batch the gateway runs itself is cancelled through a running gateway's admin API.`,
  logout: `Usage: modelgate logout

Revokes the saved login's token at its gateway and deletes the credentials file.`,
  serve: `Usage: modelgate serve [--config PATH] [--host ADDRESS] [--port N] [--workers N|auto]

Runs the gateway on the config's listen address; --host and --port (else $MODELGATE_HOST, $MODELGATE_PORT) replace
its parts. KV path: $MODELGATE_KV, else the config's kv_path.
--workers N (else $MODELGATE_WORKERS; default 1) runs N serving workers on that one port, auto one per core
(Linux only); each keeps its own caches and /metrics, all share the KV (see docs/scaling.md).
The admin API under /admin is on when $MODELGATE_ADMIN_KEY is set.`,
  token: `Usage: modelgate token <create|list|get|update|revoke> [options]

  token create --group G [--name N] [--owner EMAIL] [--expires-in 30d | --expires-at ISO] [limit flags]
                                   prints the secret alone on stdout, once; --owner names the person it is for
  token list [--group G] [--json]  id, name, group, owner, created, expiry, status, limits
  token get ID [--json]
  token update ID [--name N] [--group G] [--expires-in D | --expires-at ISO | --no-expiry]
                  [--disable | --enable] [limit flags | --clear-limits]
                                   limit flags are merged into the token's limits
  token revoke ID                  stops the token working on every instance within a second

${LIMIT_FLAGS}`,
  group: `Usage: modelgate group <list|create|update|delete> [options]

  group list [--json]
  group create NAME --listing anthropic|openai|auto --models a,b [--guardrails r,s] [limit flags]
  group update NAME [--listing L] [--models a,b] [--guardrails r,s | --clear-guardrails]
                    [limit flags | --clear-limits]
  group delete NAME                refused while an active token uses it

Groups from the config are written into KV at every start and cannot be changed here; edit the config.

${LIMIT_FLAGS}`,
  response: `Usage: modelgate response <delete|purge> [options]

  response delete RESP_ID          deletes one stored response (its input and output), whichever token made it
  response purge --token TOK_ID    deletes every stored response of a token

Responses are kept for responses_store.days (default 30) when responses_store.enabled is true; a token can also
delete its own with DELETE /v1/responses/{id}.`,
  "operator-key": `Usage: modelgate operator-key <create|list|revoke> [options]

  operator-key create --name PERSON --role owner|admin|viewer [--expires-in 90d | --expires-at ISO]
                                   prints the mgk- secret alone on stdout, once; 90 days unless told
  operator-key list [--json]       id, name, role, created, expiry, status (never secrets)
  operator-key revoke ID           the key answers 401 from then on

Each call made with a key to the admin API is recorded in the audit trail under its name.`,
  audit: `Usage: modelgate audit [--actor NAME] [--action token.revoke] [--since 7d|YYYY-MM-DD] [--limit 100]
                      [--cursor C] [--json]

Every change made through the admin API, the console or the CLI: when, who ("admin key", "cli", or an operator
key's name), from where, the action, its target and the fields it changed. Kept audit.days days (default 365).
Changes made with this CLI are recorded as actor "cli".`,
  mcp: `Usage: modelgate mcp grants <list|revoke> [options]

  mcp grants list [--json]         id, client, person (or token), group it acts in now, created, refreshed, ends
  mcp grants revoke ID             its tokens answer 401 from the next call on, on every instance

An MCP client that signs in with OAuth (Claude's connectors, ChatGPT, VS Code, Cursor) holds a grant of the person
who allowed it; it acts in their first token group and ends when they are removed (see docs/mcp.md).`,
  usage: `Usage: modelgate usage [--by token|owner|group|model|session|server|tool|day] [--since 7d|YYYY-MM-DD]
                      [--until YYYY-MM-DD] [--name KEY] [--json]
       modelgate usage log [--token ID] [--owner EMAIL] [--group G] [--model M] [--session S] [--status N]
                      [--upstream U] [--affinity kept|made|moved] [--since 1h] [--limit 100] [--json]

--by owner adds up each person's tokens (tokens without an owner are left out).
--by server and --by tool count the calls of MCP tools through /mcp (TOOL_CALLS, TOOL_ERRORS), per server and
per server/tool.

Totals are per UTC day and written about once a second; the log keeps the last usage.request_log_days days.
COST is in the config's currency at each deployment's price; UNPRICED counts requests whose deployment has none.`,
};

/** `serve`: one gateway, or several serving workers on one port with `--workers`. */
async function serveCommand(args: Args, io: Io): Promise<number> {
  const text = (name: string) => {
    const value = args.flags[name];
    if (value === true) throw new RangeError(`Cannot parse arguments: --${name} needs a value`);
    return value;
  };
  const flags = { config: text("config"), host: text("host"), port: text("port") };
  const count = workerCount(args.flags.workers, io.env, { os: Deno.build.os, cores: navigator.hardwareConcurrency });
  if (count === 1) return await serve(flags, io);
  return await superviseWorkers(count, flags, {
    err: io.err,
    spawn: spawnWorker,
    onKvOpen: io.onKvOpen,
    onSignal: stopSignals,
  });
}

/** Runs one command line; returns the exit code. */
export async function runCli(args: Args, io: Io): Promise<number> {
  const command = args.words[0] ?? "";
  if (args.flags.help || command === "help" || command === "") {
    const topic = command === "help" ? args.words[1] ?? "" : command;
    (command === "" && !args.flags.help ? io.err : io.out)(HELP[topic] ?? HELP[""]);
    return command === "" && !args.flags.help ? 2 : 0;
  }
  if (command === "login") return await loginCommand(args, io, HELP.login);
  if (command === "run") return await runCommand(args, io, HELP.run);
  if (command === "logout") return await logoutCommand(args, io);
  if (command === "serve") return await serveCommand(args, io);
  if (command === "token") return await tokenCommand(args, io, HELP.token);
  if (command === "group") return await groupCommand(args, io, HELP.group);
  if (command === "usage") return await usageCommand(args, io);
  if (command === "response") return await responseCommand(args, io, HELP.response);
  if (command === "audit") return await auditCommand(args, io);
  if (command === "operator-key") return await operatorKeyCommand(args, io, HELP["operator-key"]);
  if (command === "mcp") return await mcpCommand(args, io, HELP.mcp);
  if (command === "batch") return await batchCommand(args, io, HELP.batch);
  io.err(`Unknown command "${command}"\n\n${HELP[""]}`);
  return 2;
}

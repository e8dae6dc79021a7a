/** @module The CLI commands: serve, token create/list/revoke and group list, with help for each. */
import { loadConfigFrom } from "../config.ts";
import { kvLocation } from "../runtime.ts";
import { openStore, seedGroups, type Store } from "../store.ts";
import { type Args, parseDuration } from "./args.ts";
import { serve } from "../server.ts";

/** Where a command writes: the secret or data goes to `out`, human text to `err`. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  env(name: string): string | undefined;
}

const HELP: Record<string, string> = {
  "": `modelgate: a model-access gateway

Usage: modelgate <command> [options]

Commands:
  serve                       run the gateway
  token create --group G      create a token and print its secret once
  token list                  list tokens (never their secrets)
  token revoke ID             revoke a token at once
  group list                  list groups and their models

Every command takes --config PATH (else $MODELGATE_CONFIG, else config/gateway.yaml, else the example)
and --help.`,
  serve: `Usage: modelgate serve [--config PATH]

Runs the gateway on the config's listen address. KV path: $MODELGATE_KV, else the config's kv_path.`,
  token: `Usage: modelgate token <create|list|revoke> [options]

  token create --group G [--name N] [--expires-in 30d]   prints the secret alone on stdout
  token list [--json]                                     id, name, group, created, expiry, status
  token revoke ID                                         stops the token working at once`,
  group: `Usage: modelgate group list [--json]

Groups from the config are written into KV at every start; the config wins for its names.`,
};

function table(rows: string[][]): string {
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => row[col].length)));
  return rows.map((row) => row.map((cell, col) => cell.padEnd(widths[col])).join("  ").trimEnd()).join("\n");
}

async function withStore<T>(args: Args, io: Io, run: (store: Store) => Promise<T>): Promise<T> {
  const { config } = await loadConfigFrom(args.flags.config as string | undefined, io.env);
  const store = await openStore(kvLocation(config.kv_path, io.env));
  try {
    await seedGroups(store, config.groups);
    return await run(store);
  } finally {
    store.close();
  }
}

async function token(args: Args, io: Io): Promise<number> {
  const [, action, id] = args.words;
  if (action === "create") {
    const group = args.flags.group;
    if (typeof group !== "string") throw new RangeError("Cannot create token: --group is required");
    const name = typeof args.flags.name === "string" ? args.flags.name : undefined;
    const expiresIn = typeof args.flags["expires-in"] === "string"
      ? parseDuration(args.flags["expires-in"])
      : undefined;
    return await withStore(args, io, async (store) => {
      const now = new Date();
      const expiresAt = expiresIn === undefined ? undefined : new Date(now.getTime() + expiresIn);
      const { secret, record } = await store.createToken({ group, name, expiresAt, now });
      io.err(
        `Created token ${record.id} ("${record.name}") in group "${group}"` +
          (record.expires_at ? `, expires ${record.expires_at}` : "") + ". The secret is shown once:",
      );
      io.out(secret);
      return 0;
    });
  }
  if (action === "list") {
    return await withStore(args, io, async (store) => {
      const tokens = await store.listTokens();
      if (args.flags.json) return io.out(JSON.stringify(tokens, null, 2)), 0;
      const rows = tokens.map((t) => [t.id, t.name, t.group, t.created_at, t.expires_at ?? "-", status(t)]);
      io.out(table([["ID", "NAME", "GROUP", "CREATED", "EXPIRES", "STATUS"], ...rows]));
      return 0;
    });
  }
  if (action === "revoke") {
    if (!id) throw new RangeError("Cannot revoke token: give its ID (see token list)");
    return await withStore(args, io, async (store) => {
      const record = await store.revokeToken(id);
      if (!record) throw new RangeError(`Cannot revoke token: no token "${id}"`);
      io.err(`Revoked token ${record.id} ("${record.name}")`);
      return 0;
    });
  }
  io.err(HELP.token);
  return 2;
}

function status(t: { disabled: boolean; expires_at: string | null }): string {
  if (t.disabled) return "revoked";
  return t.expires_at && Date.parse(t.expires_at) <= Date.now() ? "expired" : "active";
}

async function group(args: Args, io: Io): Promise<number> {
  if (args.words[1] !== "list") return io.err(HELP.group), 2;
  return await withStore(args, io, async (store) => {
    const groups = await store.listGroups();
    if (args.flags.json) return io.out(JSON.stringify(groups, null, 2)), 0;
    io.out(table([["NAME", "LISTING", "MODELS"], ...groups.map((g) => [g.name, g.listing, g.models.join(", ")])]));
    return 0;
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
  if (command === "serve") return await serve(args.flags.config as string | undefined, io);
  if (command === "token") return await token(args, io);
  if (command === "group") return await group(args, io);
  io.err(`Unknown command "${command}"\n\n${HELP[""]}`);
  return 2;
}

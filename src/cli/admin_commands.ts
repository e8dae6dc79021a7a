/**
 * @module The CLI's token, group and response commands over the same service as the admin API: flags become the
 * API's JSON input, results print as tables for people or as JSON with --json (a list always as an array).
 */
import { LIMIT_FIELDS } from "../access/limits.ts";
import { seedGroups } from "../access/store.ts";
import { type AdminService, adminService } from "../admin/service.ts";
import type { Store } from "../access/store.ts";
import type { Config, Limits } from "../core/config.ts";
import { loadConfigFrom } from "../core/config_load.ts";
import { parseDuration } from "../core/duration.ts";
import type { TokenRecord } from "../core/principal.ts";
import { buildRouteTable, serves } from "../relay/routing.ts";
import { openKvStore } from "../serve/runtime.ts";
import type { Args, Io } from "./args.ts";
import { jsonText, printable, table } from "./print.ts";

/** Runs `run` with the service over the configured KV, closing it afterwards. */
export async function withService<T>(
  args: Args,
  io: Io,
  run: (service: AdminService, opened: { store: Store; config: Config }) => Promise<T>,
): Promise<T> {
  const { config, source } = await loadConfigFrom(args.flags.config as string | undefined, io.env);
  // The CLI's own notes (a KV file's mode tightened, a write given up) go to stderr as the gateway would log them.
  const store = await openKvStore(config.kv_path, source, { ...io, log: (line) => io.err(JSON.stringify(line)) });
  try {
    await seedGroups(store, config.groups);
    // Only which models are served matters here, not how to reach them.
    const table = buildRouteTable(config, () => undefined);
    return await run(
      adminService({
        store,
        config,
        served: (model) => serves(table, model),
        now: () => new Date(),
        // Whoever can run the CLI can open the KV file, so it acts as the owner; it is named "cli" in the trail.
        actor: { name: "cli", role: "owner", via: "cli" },
      }),
      { store, config },
    );
  } finally {
    store.close();
  }
}

/** A flag's value when it was given one. */
export function flag(args: Args, name: string): string | undefined {
  const value = args.flags[name];
  return typeof value === "string" ? value : undefined;
}

/** `--requests-per-minute 60` and friends; values stay strings when they are not numbers so the schema names them. */
function limitFlags(args: Args): Partial<Record<keyof Limits, unknown>> | undefined {
  const out: Partial<Record<keyof Limits, unknown>> = {};
  for (const field of Object.keys(LIMIT_FIELDS) as (keyof Limits)[]) {
    const value = flag(args, field.replaceAll("_", "-"));
    if (value !== undefined) out[field] = /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** An update's limits: null with --clear-limits, the given flags over `current`, or undefined to leave them. */
function limitsUpdate(args: Args, current: Limits | undefined) {
  if (args.flags["clear-limits"]) return null;
  const given = limitFlags(args);
  return given && { ...current, ...given };
}

function expiry(args: Args): string | null | undefined {
  if (args.flags["no-expiry"]) return null;
  const expiresIn = flag(args, "expires-in");
  if (expiresIn !== undefined) return new Date(Date.now() + parseDuration(expiresIn)).toISOString();
  return flag(args, "expires-at");
}

function formatLimits(limits: Limits | undefined): string {
  const short: Record<keyof Limits, string> = {
    requests_per_minute: "rpm",
    tokens_per_minute: "tpm",
    tokens_per_day: "tpd",
    tokens_per_month: "tpmo",
    cost_per_day: "cost/day",
    cost_per_month: "cost/month",
    tool_calls_per_minute: "tools/min",
    mcp_requests_per_minute: "mcp/min",
  };
  const parts = Object.entries(limits ?? {}).map(([field, value]) => `${short[field as keyof Limits]}=${value}`);
  return parts.join(" ") || "-";
}

function status(t: TokenRecord): string {
  if (t.disabled) return "revoked";
  return t.expires_at && Date.parse(t.expires_at) <= Date.now() ? "expired" : "active";
}

/** Prints tokens: a list (`token list`, an array with --json, however many) or one token (`get`, `update`). */
function printTokens(io: Io, args: Args, tokens: TokenRecord | TokenRecord[]): number {
  if (args.flags.json) return io.out(jsonText(tokens)), 0;
  tokens = [tokens].flat();
  const rows = tokens.map((
    t,
  ) => [t.id, t.name, t.group, t.owner ?? "-", t.created_at, t.expires_at ?? "-", status(t), formatLimits(t.limits)]);
  io.out(table([["ID", "NAME", "GROUP", "OWNER", "CREATED", "EXPIRES", "STATUS", "LIMITS"], ...rows]));
  return 0;
}

/** `token create|list|get|update|revoke`. */
export async function tokenCommand(args: Args, io: Io, help: string): Promise<number> {
  const [, action, id] = args.words;
  const needId = (verb: string) => {
    if (!id) throw new RangeError(`Cannot ${verb} token: give its ID (see token list)`);
    return id;
  };
  switch (action) {
    case "create":
      return await withService(args, io, async (service) => {
        const input = {
          group: flag(args, "group"),
          name: flag(args, "name"),
          owner: flag(args, "owner"),
          expires_at: expiry(args),
          limits: limitFlags(args),
        };
        const { token, secret } = await service.createToken(input);
        if (args.flags.json) return io.out(jsonText({ token, secret })), 0;
        io.err(
          `Created token ${token.id} ("${printable(token.name)}") in group "${printable(token.group)}"` +
            (token.expires_at ? `, expires ${token.expires_at}` : "") + ". The secret is shown once:",
        );
        io.out(secret);
        return 0;
      });
    case "list":
      return await withService(args, io, async (s) => printTokens(io, args, await s.listTokens(flag(args, "group"))));
    case "get":
      return await withService(args, io, async (s) => printTokens(io, args, await s.getToken(needId("show"))));
    case "update":
      return await withService(args, io, async (service) => {
        const current = await service.getToken(needId("update"));
        const limits = limitsUpdate(args, current.limits);
        const disabled = args.flags.disable ? true : args.flags.enable ? false : undefined;
        const input = {
          name: flag(args, "name"),
          group: flag(args, "group"),
          expires_at: expiry(args),
          disabled,
          limits,
        };
        return printTokens(io, args, await service.updateToken(current.id, input));
      });
    case "revoke":
      return await withService(args, io, async (service) => {
        const record = await service.revokeToken(needId("revoke"));
        io.err(`Revoked token ${record.id} ("${printable(record.name)}")`);
        return 0;
      });
  }
  io.err(help);
  return 2;
}

/** `group list|create|update|delete`. */
export async function groupCommand(args: Args, io: Io, help: string): Promise<number> {
  const [, action, name] = args.words;
  const list = (name: string) => flag(args, name)?.split(",").map((m) => m.trim()).filter(Boolean);
  const models = list("models");
  switch (action) {
    case "list":
      return await withService(args, io, async (service) => {
        const groups = await service.listGroups();
        if (args.flags.json) return io.out(jsonText(groups)), 0;
        const rows = groups.map((g) => [g.name, g.listing, g.models.join(", "), formatLimits(g.limits)]);
        io.out(table([["NAME", "LISTING", "MODELS", "LIMITS"], ...rows]));
        return 0;
      });
    case "create":
      return await withService(args, io, async (service) => {
        const group = await service.createGroup({
          name,
          listing: flag(args, "listing"),
          models: models ?? [],
          limits: limitFlags(args),
          guardrails: list("guardrails"),
        });
        io.err(`Created group "${printable(group.name)}"`);
        return 0;
      });
    case "update":
      return await withService(args, io, async (service) => {
        const current = await service.getGroup(name ?? "");
        const limits = limitsUpdate(args, current.limits);
        const guardrails = args.flags["clear-guardrails"] ? null : list("guardrails");
        const listing = flag(args, "listing");
        const group = await service.updateGroup(current.name, { listing, models, limits, guardrails });
        io.err(`Updated group "${printable(group.name)}"`);
        return 0;
      });
    case "delete":
      return await withService(args, io, async (service) => {
        await service.deleteGroup(name ?? "");
        io.err(`Deleted group "${printable(name ?? "")}"`);
        return 0;
      });
  }
  io.err(help);
  return 2;
}

/** `response delete ID` and `response purge --token ID`. */
export async function responseCommand(args: Args, io: Io, help: string): Promise<number> {
  const [, action, id] = args.words;
  if (action === "delete" && id) {
    return await withService(args, io, async (service) => {
      const result = await service.deleteResponse(id);
      io.err(`Deleted response ${printable(result.id)} of token ${printable(result.token)}`);
      return 0;
    });
  }
  const token = flag(args, "token");
  if (action === "purge" && token) {
    return await withService(args, io, async (service) => {
      const result = await service.purgeResponses(token);
      io.err(`Deleted ${result.deleted} stored response(s) of token ${printable(result.token)}`);
      return 0;
    });
  }
  io.err(help);
  return 2;
}

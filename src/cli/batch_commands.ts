/**
 * @module The CLI's `batch list` and `batch cancel`: every batch whoever made it (state, counts, owner, models, age),
 * and a cancel that reaches the batch's deployment with the upstream credentials of the environment.
 */
import { type BatchSummary, cancelBatch, listBatches } from "../batches/operate.ts";
import type { Config } from "../core/config.ts";
import { buildRouteTable } from "../relay/routing.ts";
import { upstreamTransports } from "../serve/deps.ts";
import { flag, withService } from "./admin_commands.ts";
import type { Args, Io } from "./args.ts";
import { jsonText, printable, table } from "./print.ts";

function counts(summary: BatchSummary): string {
  return Object.entries(summary.counts).map(([name, value]) => `${name}=${value}`).join(" ") || "-";
}

function print(io: Io, args: Args, batches: BatchSummary[]): number {
  if (args.flags.json) return io.out(jsonText(batches)), 0;
  const rows = batches.map((b) => [
    b.id,
    b.protocol,
    b.state,
    counts(b),
    b.owner ?? b.token,
    b.models.map(printable).join(",") || "-",
    b.runs_on,
    `${Math.floor(b.age_seconds / 60)}m`,
  ]);
  io.out(table([["ID", "API", "STATE", "COUNTS", "OWNER", "MODELS", "RUNS_ON", "AGE"], ...rows]));
  return 0;
}

function deskFor(config: Config, store: { kv: Deno.Kv }, io: Io) {
  const transports = upstreamTransports(config, { env: io.env, log: (line) => io.err(JSON.stringify(line)) });
  const routes = buildRouteTable(config, (upstream) => transports.get(upstream.name)?.transport);
  return { kv: store.kv, table: routes, now: () => new Date() };
}

/** `batch list [--limit N] [--json]`, `batch cancel ID [--json]`. */
export async function batchCommand(args: Args, io: Io, help: string): Promise<number> {
  const [, action, id] = args.words;
  if (action === "list") {
    const limit = Number(flag(args, "limit") ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RangeError("--limit must be from 1 to 1000");
    return await withService(
      args,
      io,
      async (_service, { store, config }) => print(io, args, await listBatches(deskFor(config, store, io), limit)),
    );
  }
  if (action === "cancel") {
    if (!id) throw new RangeError("Cannot cancel batch: give its ID (see batch list)");
    return await withService(args, io, async (service, { store, config }) => {
      const desk = deskFor(config, store, io);
      return print(io, args, [await service.cancelBatch(id, () => cancelBatch(desk, id))]);
    });
  }
  io.err(help);
  return 2;
}

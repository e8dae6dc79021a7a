/**
 * @module The CLI's usage commands over the admin service: totals per token, owner, group, model, session, MCP server
 * or tool, or day,
 * and the request log, as tables with a COST column for people or as JSON with --json.
 */
import type { UsageRow } from "../usage/query.ts";
import type { RequestLogEntry } from "../usage/log_entry.ts";
import { flag, withService } from "./admin_commands.ts";
import type { Args, Io } from "./args.ts";
import { jsonText, printable, table } from "./print.ts";

function usageTable(rows: UsageRow[]): string {
  // The MCP columns only where there were tool calls: most gateways have none.
  const tools = rows.some((r) => r.tool_calls > 0);
  const header = [
    "KEY",
    "REQUESTS",
    "ERRORS",
    "INCOMPLETE",
    "INPUT",
    "OUTPUT",
    "CACHE_READ",
    "CACHE_WRITE",
    "TOTAL",
    "COST",
    "UNPRICED",
    ...tools ? ["TOOL_CALLS", "TOOL_ERRORS"] : [],
  ];
  return table([
    header,
    ...rows.map((r) => [
      r.key,
      ...[
        r.requests,
        r.errors,
        r.incomplete,
        r.input_tokens,
        r.output_tokens,
        r.cache_read_input_tokens,
        r.cache_creation_input_tokens,
        r.total_tokens,
      ].map(String),
      r.cost,
      String(r.unpriced),
      ...tools ? [String(r.tool_calls), String(r.tool_errors)] : [],
    ]),
  ]);
}

function logTable(entries: RequestLogEntry[]): string {
  // MODEL and UPSTREAM name the deployment that served the request; PIN says how its session pin turned out.
  const header = [
    "TIME",
    "TOKEN",
    "OWNER",
    "MODEL",
    "UPSTREAM",
    "STATUS",
    "INPUT",
    "CACHED",
    "OUTPUT",
    "COST",
    "COMPLETE",
    "MS",
    "SESSION",
    "PIN",
  ];
  return table([
    header,
    ...entries.map((e) => [
      e.time,
      e.token_id,
      e.owner ?? "-",
      // A call of an MCP tool has no model: its tool stands there, and its server as the upstream.
      e.tool ? `tool ${e.tool.name ?? "-"}` : e.model ?? "-",
      e.tool ? e.tool.server ?? "-" : e.upstream ?? "-",
      String(e.status),
      String(e.input_tokens + e.cache_read_input_tokens + e.cache_creation_input_tokens),
      String(e.cache_read_input_tokens),
      String(e.output_tokens),
      // An entry whose deployment has no price shows that, not a cost of 0.
      e.unpriced ? "unpriced" : e.cost,
      e.status >= 400 ? "-" : e.usage_complete ? "yes" : "no",
      String(e.duration_ms ?? "-"),
      e.session_id ?? "-",
      e.affinity ?? "-",
    ]),
  ]);
}

/** The named flags that were given, as a query object. */
function pick(args: Args, names: string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => {
    const value = flag(args, name);
    return value === undefined ? [] : [[name, value]];
  }));
}

/** `usage [--by ...]` totals and `usage log [filters]`. */
export async function usageCommand(args: Args, io: Io): Promise<number> {
  return await withService(args, io, async (service) => {
    if (args.words[1] === "log") {
      const { data } = await service.requests(
        pick(args, ["token", "owner", "group", "model", "session", "status", "upstream", "affinity", "since", "limit"]),
      );
      io.out(args.flags.json ? jsonText(data) : logTable(data));
      return 0;
    }
    const result = await service.usage(pick(args, ["by", "since", "until", "name"]));
    io.out(
      args.flags.json
        ? jsonText(result)
        : `${printable(`${result.since} to ${result.until}, by ${result.by}, cost in ${result.currency}`)}\n${
          usageTable(result.data)
        }`,
    );
    return 0;
  });
}

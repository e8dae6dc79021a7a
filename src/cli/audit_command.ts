/** @module The CLI's `audit` command: the audit trail, newest first, filtered as the admin API filters it. */
import type { AuditRecord } from "../admin/audit.ts";
import { flag, withService } from "./admin_commands.ts";
import type { Args, Io } from "./args.ts";
import { jsonText, printable, table } from "./print.ts";

/** What a change set, as `field=after` for each field whose value it changed (all of them for a creation). */
function changed(record: AuditRecord): string {
  const before = (record.before ?? {}) as Record<string, unknown>;
  const after = (record.after ?? {}) as Record<string, unknown>;
  const show = (value: unknown) => value === undefined ? "-" : JSON.stringify(value);
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((field) => show(before[field]) !== show(after[field]));
  return fields.map((field) => `${field}: ${show(before[field])} -> ${show(after[field])}`).join("; ") || "-";
}

/** `audit [--actor A] [--action X] [--since 7d] [--limit N] [--cursor C] [--json]`. */
export async function auditCommand(args: Args, io: Io): Promise<number> {
  return await withService(args, io, async (service) => {
    const query: Record<string, string> = {};
    for (const name of ["actor", "action", "since", "limit", "cursor"]) {
      const value = flag(args, name);
      if (value !== undefined) query[name] = value;
    }
    const page = await service.audit(query);
    if (args.flags.json) return io.out(jsonText(page)), 0;
    const rows = page.data.map((r) => [
      r.time,
      r.actor,
      r.via,
      r.action,
      r.target,
      r.ip ?? "-",
      r.user_agent ?? "-",
      changed(r),
    ]);
    io.out(table([["TIME", "ACTOR", "VIA", "ACTION", "TARGET", "IP", "USER_AGENT", "CHANGE"], ...rows]));
    if (page.next_cursor) io.err(`More: add --cursor ${printable(page.next_cursor)}`);
    return 0;
  });
}

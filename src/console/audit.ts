/**
 * @module The audit trail page: who changed what, when and from where, newest first, with the fields each change
 * set (before → after), filtered by actor, action and age through the admin service, one page at a time.
 */
import { AUDIT_ACTIONS, type AuditRecord } from "../admin/audit.ts";
import { type ConsoleRequest, type ConsoleRoute, refusal } from "./context.ts";
import { moment } from "./format.ts";
import { type Html, html } from "./html.ts";
import { pageResponse } from "./page.ts";
import { select, table } from "./widgets.ts";

const AGES = ["1h", "24h", "7d", "30d"];
const PAGE = 100;

/** A value as one short line of text. */
function text(value: unknown): string {
  return value === undefined || value === null ? "–" : typeof value === "string" ? value : JSON.stringify(value);
}

/** The fields a change set: each one whose value differs, as `field: before → after`. */
function changes(record: AuditRecord): Html {
  const before = (record.before ?? {}) as Record<string, unknown>;
  const after = (record.after ?? {}) as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((field) => text(before[field]) !== text(after[field]));
  // A creation lists what was set; a change and a removal, what each field was and became.
  const shown = (field: string) =>
    record.before === null ? text(after[field]) : `${text(before[field])} → ${text(after[field])}`;
  return html`<ul class="changes">${
    fields.map((field) =>
      html`
        <li><code>${field}</code>: ${shown(field)}</li>
      `
    )
  }</ul>`;
}

function rows(records: readonly AuditRecord[]): Html[] {
  return records.map((r) =>
    html`
      <tr>
        <td>${moment(r.time, "never", true)}</td>
        <td>${r.actor}<div class="muted small">${r.via}${r.actor_key ? ` · ${r.actor_key}` : ""}</div></td>
        <td><code>${r.action}</code></td>
        <td>${r.target}</td>
        <td>${changes(r)}</td>
        <td class="from" title="${r.user_agent ?? ""}">${r.ip ?? "–"}<div class="muted small">${r.user_agent ??
          ""}</div></td>
      </tr>
    `
  );
}

async function auditPage(c: ConsoleRequest): Promise<Response> {
  const q = c.url.searchParams;
  const filters: Record<string, string> = {};
  for (const name of ["actor", "action", "since", "cursor"]) {
    const value = q.get(name)?.trim();
    if (value) filters[name] = value;
  }
  let records: AuditRecord[] = [];
  let next: string | null = null;
  let notice: { text: string; tone: "bad" } | undefined;
  let status = 200;
  try {
    ({ data: records, next_cursor: next } = await c.service.audit({ ...filters, limit: PAGE }));
  } catch (err) {
    const refused = refusal(err);
    if (!refused) throw err;
    notice = { text: refused.message, tone: "bad" };
    status = refused.status;
  }
  const { cursor: _, ...kept } = filters;
  const older = next && `/ui/audit?${new URLSearchParams({ ...kept, cursor: next })}`;
  const form = html`<form method="get" action="/ui/audit" class="filters">
<label>Actor <input name="actor" value="${filters.actor ?? ""}" placeholder="admin key"></label>
<label>Action ${select("action", AUDIT_ACTIONS, filters.action, "any")}</label>
<label>Since ${select("since", AGES, filters.since, "any time")}</label>
<button type="submit">Apply</button></form>`;
  const empty = Object.keys(kept).length > 0 ? "No change matches these filters." : "No changes recorded yet.";
  const body = html`
    ${form}
        <p
      class="muted">Every change made through the admin API, the console or the CLI, newest first; kept ${c.deps
        .config.audit.days} days.</p>
        ${table(["Time", "Actor", "Action", "Target", "Change", "From"], rows(records), empty)}
        ${older ? html`<p><a href="${older}">Older changes</a></p>` : ""}
  `;
  return pageResponse({ title: "Audit trail", nav: "/ui/audit", body, notice }, status);
}

/** The audit trail's route. */
export const AUDIT_ROUTES: readonly ConsoleRoute[] = [{ method: "GET", path: "/audit", handle: auditPage }];

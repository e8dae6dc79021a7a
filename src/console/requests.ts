/**
 * @module The request log page: newest first, filtered by token, model, status and session through the admin
 * service, and refreshed in place by the page's script every few seconds.
 */
import type { TokenRecord } from "../core/principal.ts";
import type { RequestLogEntry } from "../usage/recorder.ts";
import { type ConsoleRequest, type ConsoleRoute, refusal } from "./context.ts";
import { badge, count, duration, moment } from "./format.ts";
import { type Html, html } from "./html.ts";
import { pageResponse } from "./page.ts";
import { select, table } from "./widgets.ts";

const LIMITS = ["50", "100", "250", "500"];
/** Refresh choices in seconds; 0 is off. */
const EVERY: Record<string, string> = { "0": "off", "2": "every 2 s", "5": "every 5 s", "15": "every 15 s" };

function statusBadge(entry: RequestLogEntry): Html {
  const tone = entry.status >= 500 ? "bad" : entry.status >= 400 ? "warn" : "ok";
  return badge(String(entry.status), tone);
}

/** A link that filters the log by one value. */
function filterLink(name: string, value: string, text: string): Html {
  return html`<a href="/ui/requests?${name}=${encodeURIComponent(value)}" title="${value}">${text}</a>`;
}

/** Log entries as table rows; `names` maps token ids to names. */
export function logRows(entries: readonly RequestLogEntry[], names: ReadonlyMap<string, string>): Html[] {
  return entries.map((e) => {
    const input = e.input_tokens + e.cache_read_input_tokens + e.cache_creation_input_tokens;
    const partial = e.status < 400 && !e.usage_complete
      ? html`
        <span class="muted" title="the stream ended before its usage was final">(partial)</span>
      `
      : "";
    return html`
      <tr>
        <td>${moment(e.time)}</td>
        <td>${statusBadge(e)}</td>
        <td>${filterLink("model", e.model, e.model)}</td>
        <td>${e.upstream ?? "–"}</td>
        <td>${filterLink("token", e.token_id, names.get(e.token_id) ?? e.token_id)}</td>
        <td>${e.group ?? "–"}</td>
        <td>${e.protocol}${e.stream ? " · stream" : ""}</td>
        <td class="num">${duration(e.duration_ms)}</td>
        <td class="num">${duration(e.ttfb_ms)}</td>
        <td class="num">${count(input)}</td>
        <td class="num">${count(e.output_tokens)}${partial}</td>
        <td class="session">${e.session_id ? filterLink("session", e.session_id, e.session_id) : "–"}</td>
        <td>${e.error ?? ""}</td>
      </tr>
    `;
  });
}

/** The head of the log table. */
export const LOG_HEAD = [
  "Time",
  "Status",
  "Model",
  "Upstream",
  "Token",
  "Group",
  "Client",
  "Duration",
  "First byte",
  "Input tokens",
  "Output tokens",
  "Session",
  "Error",
];

/** Token ids to names, for showing who sent what. */
export function tokenNames(tokens: readonly TokenRecord[]): Map<string, string> {
  return new Map(tokens.map((t) => [t.id, t.name]));
}

async function logPage(c: ConsoleRequest): Promise<Response> {
  const q = c.url.searchParams;
  const filters: Record<string, string> = {};
  for (const name of ["token", "model", "status", "session"]) {
    const value = q.get(name)?.trim();
    if (value) filters[name] = value;
  }
  const limit = LIMITS.includes(q.get("limit") ?? "") ? q.get("limit")! : "100";
  const every = (q.get("every") ?? "5") in EVERY ? q.get("every") ?? "5" : "5";
  const tokens = await c.service.listTokens();
  let entries: RequestLogEntry[] = [];
  let notice: { text: string; tone: "bad" } | undefined;
  let status = 200;
  try {
    entries = (await c.service.requests({ ...filters, limit })).data;
  } catch (err) {
    const refused = refusal(err);
    if (!refused) throw err;
    notice = { text: refused.message, tone: "bad" };
    status = refused.status;
  }
  const names = tokenNames(tokens);
  const tokenOptions = tokens.map((t) =>
    html`
      <option value="${t.id}" ${t.id === filters.token ? "selected" : ""}>${t.name} (${t.id})</option>
    `
  );
  const form = html`<form method="get" action="/ui/requests" class="filters">
<label>Token <select name="token"><option value="">any</option>${tokenOptions}</select></label>
<label>Model ${select("model", [...c.deps.table.models.keys()], filters.model, "any")}</label>
<label>Status <input name="status" inputmode="numeric" size="4" value="${
    filters.status ?? ""
  }" placeholder="429"></label>
<label>Session <input name="session" value="${filters.session ?? ""}"></label>
<label>Show ${select("limit", LIMITS, limit)}</label>
<label>Refresh <select name="every">${
    Object.entries(EVERY).map(([value, text]) =>
      html`
        <option value="${value}" ${value === every ? "selected" : ""}>${text}</option>
      `
    )
  }</select></label>
<button type="submit">Apply</button>${
    Object.keys(filters).length > 0
      ? html`
        <a href="/ui/requests">Clear</a>
      `
      : ""
  }</form>`;
  const filtered = Object.keys(filters).length > 0;
  const empty = filtered
    ? "No request matches these filters."
    : "No requests yet. They appear here a second or so after they finish.";
  const log = html`
    <section id="log"
      data-refresh="${every}"><p class="muted">${entries.length} newest ${entries.length === 1
        ? "request"
        : "requests"}${filtered ? " matching" : ""}, as of ${moment(c.now.toISOString())}.</p>${table(
          LOG_HEAD,
          logRows(entries, names),
          empty,
        )}</section>
  `;
  return pageResponse({ title: "Request log", nav: "/ui/requests", body: html`${form}${log}`, notice }, status);
}

/** The request log's route. */
export const REQUEST_ROUTES: readonly ConsoleRoute[] = [{ method: "GET", path: "/requests", handle: logPage }];

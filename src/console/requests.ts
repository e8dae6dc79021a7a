/**
 * @module The request log page: newest first, with the deployment that served each request and its pin, filtered
 * through the admin service, and refreshed in place by the page's script every few seconds.
 */
import type { TokenRecord } from "../core/principal.ts";
import type { RequestLogEntry } from "../usage/log_entry.ts";
import { type ConsoleRequest, type ConsoleRoute, refusal } from "./context.ts";
import { badge, count, duration, moment, money } from "./format.ts";
import { type Html, html, type HtmlValue } from "./html.ts";
import { pageResponse } from "./page.ts";
import { pricing, select, table } from "./widgets.ts";

const LIMITS = ["50", "100", "250", "500"];
/** Refresh choices in seconds; 0 is off. */
const EVERY: Record<string, string> = { "0": "off", "2": "every 2 s", "5": "every 5 s", "15": "every 15 s" };

function statusBadge(entry: RequestLogEntry): Html {
  const tone = entry.status >= 500 ? "bad" : entry.status >= 400 ? "warn" : "ok";
  return badge(String(entry.status), tone);
}

/** A link that filters the log by one value; its tooltip is the value unless `title` says more. */
function filterLink(name: string, value: string, text: HtmlValue, title = value): Html {
  return html`<a href="/ui/requests?${name}=${encodeURIComponent(value)}" title="${title}">${text}</a>`;
}

/** How log rows are shown: token names by id, and the currency when costs are shown. */
export interface LogView {
  names: ReadonlyMap<string, string>;
  currency?: string;
}

function costOf(entry: RequestLogEntry, currency: string): Html {
  if (entry.unpriced) return html`<td class="num muted" title="its deployment has no price">unpriced</td>`;
  return html`<td class="num" title="${entry.cost} ${currency}">${money(entry.cost, currency)}</td>`;
}

/** A second, smaller line under a cell's value. */
function under(text: string): Html {
  return html`<div class="muted small">${text}</div>`;
}

/** What each pin outcome means, and its colour: a moved session wrote its cached prefix again. */
const PINS: Record<string, { tone: "ok" | "warn" | "off"; title: string }> = {
  kept: { tone: "ok", title: "went back to the deployment that served its session before" },
  made: { tone: "off", title: "the session's first request here: it is pinned to this deployment now" },
  moved: { tone: "warn", title: "its pinned deployment could not serve it: the session is pinned here now" },
};

/** A muted dash for a value the entry does not have, and why in its tooltip. */
function none(why: string): Html {
  return html`<span class="muted" title="${why}">–</span>`;
}

/** The upstream that served the request, as a filter; with the model, it names the deployment. */
function upstreamCell(entry: RequestLogEntry): Html {
  return entry.upstream ? filterLink("upstream", entry.upstream, entry.upstream) : none("no upstream was asked");
}

/** How the session's pin turned out, as a badge that filters by it. */
function pinCell(entry: RequestLogEntry): Html {
  if (!entry.affinity) return none("no pin: one deployment to choose from, affinity off, or logged before pins were");
  const pin = PINS[entry.affinity] ?? { tone: "off", title: entry.affinity };
  return filterLink("affinity", entry.affinity, badge(entry.affinity, pin.tone), pin.title);
}

/** The client protocols by a short name. */
const CLIENTS: Record<string, string> = {
  anthropic: "messages",
  "openai-chat": "chat",
  "openai-responses": "responses",
  gemini: "gemini",
};

/** Log entries as table rows. */
export function logRows(entries: readonly RequestLogEntry[], view: LogView): Html[] {
  const { names, currency } = view;
  return entries.map((e) => {
    const input = e.input_tokens + e.cache_read_input_tokens + e.cache_creation_input_tokens;
    const partial = e.status < 400 && !e.usage_complete ? under("partial: the stream ended early") : "";
    return html`
      <tr>
        <td>${moment(e.time, "never", true)}</td>
        <td>${statusBadge(e)}</td>
        <td>${e.model ? filterLink("model", e.model, e.model) : "–"}</td>
        <td>${upstreamCell(e)}</td>
        <td>${pinCell(e)}</td>
        <td>${filterLink("token", e.token_id, names.get(e.token_id) ?? e.token_id)}${e.group
          ? under(e.group)
          : ""}${e.owner ? html`<div class="muted small">${filterLink("owner", e.owner, e.owner)}</div>` : ""}</td>
        <td>${CLIENTS[e.protocol] ?? e.protocol}${e.stream
          ? under(e.transport === "websocket" ? "stream on a WebSocket" : "stream")
          : ""}</td>
        <td class="num">${duration(e.duration_ms)}${under(`first byte ${duration(e.ttfb_ms)}`)}</td>
        <td class="num">${count(input)} → ${count(e.output_tokens)}${partial}${tokenDetail(e)}</td>
        ${currency ? costOf(e, currency) : ""}
        <td class="session">${e.session_id ? filterLink("session", e.session_id, e.session_id) : "–"}</td>
        <td>${e.error ?? ""}</td>
      </tr>
    `;
  });
}

/** Of the tokens shown, those read from the prompt cache and those the model spent reasoning, when there are any. */
function tokenDetail(e: RequestLogEntry): Html | string {
  const parts = [
    e.cache_read_input_tokens > 0 ? `${count(e.cache_read_input_tokens)} cached` : "",
    e.reasoning_output_tokens ? `${count(e.reasoning_output_tokens)} reasoning` : "",
  ].filter(Boolean);
  return parts.length > 0 ? under(parts.join(", ")) : "";
}

/** The head of the log table. */
export function logHead(view: LogView): string[] {
  return [
    "Time",
    "Status",
    "Model",
    "Upstream",
    "Pin",
    "Token",
    "Client",
    "Duration",
    "Tokens in → out",
    ...view.currency ? ["Cost"] : [],
    "Session",
    "Error",
  ];
}

/** How `entries` are shown: who sent them by token name, and their cost when the gateway prices requests. */
export function logView(c: ConsoleRequest, tokens: readonly TokenRecord[], entries: RequestLogEntry[]): LogView {
  const names = new Map(tokens.map((t) => [t.id, t.name]));
  return { names, currency: pricing(c.deps.config, entries) ? c.deps.config.currency : undefined };
}

async function logPage(c: ConsoleRequest): Promise<Response> {
  const q = c.url.searchParams;
  const filters: Record<string, string> = {};
  for (const name of ["token", "owner", "model", "upstream", "affinity", "status", "session"]) {
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
  const view = logView(c, tokens, entries);
  const tokenOptions = tokens.map((t) =>
    html`
      <option value="${t.id}" ${t.id === filters.token ? "selected" : ""}>${t.name} (${t.id})</option>
    `
  );
  const form = html`<form method="get" action="/ui/requests" class="filters">
<label>Token <select name="token"><option value="">any</option>${tokenOptions}</select></label>
<label>Owner <input name="owner" type="email" value="${filters.owner ?? ""}" placeholder="email"></label>
<label>Model ${select("model", [...c.deps.table.models.keys()], filters.model, "any")}</label>
<label>Upstream ${select("upstream", c.deps.config.upstreams.map((u) => u.name), filters.upstream, "any")}</label>
<label>Pin ${select("affinity", Object.keys(PINS), filters.affinity, "any")}</label>
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
          logHead(view),
          logRows(entries, view),
          empty,
        )}</section>
  `;
  return pageResponse({ title: "Request log", nav: "/ui/requests", body: html`${form}${log}`, notice }, status);
}

/** The request log's route. */
export const REQUEST_ROUTES: readonly ConsoleRoute[] = [{ method: "GET", path: "/requests", handle: logPage }];

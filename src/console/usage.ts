/**
 * @module The usage page: totals by token, owner, group, model, session or day over a chosen range of UTC days, as a
 * table and as a chart per day, and the same numbers as a CSV download, all read through the admin service.
 */
import { formatMoney, parseMoney } from "../core/money.ts";
import type { UsageRow } from "../usage/query.ts";
import { COUNTERS } from "../usage/log_entry.ts";
import { barChart } from "./chart.ts";
import { type ConsoleRequest, type ConsoleRoute, refusal } from "./context.ts";
import { daysBetween, lastDays, money } from "./format.ts";
import { html, type HtmlValue } from "./html.ts";
import { pageResponse } from "./page.ts";
import { tokenLink } from "./token_detail.ts";
import { pricing, select, usageTable } from "./widgets.ts";

const BY = ["token", "owner", "group", "model", "session", "server", "tool", "day"];
/** The chart's longest axis; a longer range is charted for its latest days (the table covers it all). */
const CHART_DAYS = 92;

/** What the page was asked for, with defaults: by token over the last seven days, charting tokens. */
function queryOf(c: ConsoleRequest) {
  const q = c.url.searchParams;
  const week = lastDays(c.now, 7);
  const by = BY.includes(q.get("by") ?? "") ? q.get("by")! : "token";
  const metric = ["tokens", "requests", "cost"].includes(q.get("metric") ?? "") ? q.get("metric")! : "tokens";
  return {
    by,
    since: q.get("since") || week[0],
    until: q.get("until") || week[6],
    name: q.get("name")?.trim() || undefined,
    metric,
  };
}

/** The range's usage, one row per day and key, through the admin service (which checks the range). */
function dailyUsage(c: ConsoleRequest, query: { by: string; since: string; until: string; name?: string }) {
  return c.service.usage({ by: query.by, since: query.since, until: query.until, name: query.name, per: "day" });
}

/** What a usage page shows: the rows and their range, or the service's refusal as a notice with its status. */
export interface PageUsage {
  rows: UsageRow[];
  range: { since: string; until: string };
  notice?: { text: string; tone: "bad" };
  status: number;
}

/** The range's usage per day and key for a page; a refusal (a bad range, say) is shown on the page, not thrown. */
export async function pageUsage(
  c: ConsoleRequest,
  query: { by: string; since: string; until: string; name?: string },
): Promise<PageUsage> {
  try {
    const result = await dailyUsage(c, query);
    return { rows: result.data, range: { since: result.since, until: result.until }, status: 200 };
  } catch (err) {
    const refused = refusal(err);
    if (!refused) throw err;
    const range = { since: query.since, until: query.until };
    return { rows: [], range, notice: { text: refused.message, tone: "bad" }, status: refused.status };
  }
}

/** Per-day rows added up per key, the most spent (then the most tokens) first; per day for `by=day`. */
export function totalsOf(rows: readonly UsageRow[], byDay: boolean): UsageRow[] {
  const totals = new Map<string, Record<string, unknown>>();
  // Costs add up exactly, in pico-units, as the service sums them.
  const costs = new Map<string, bigint>();
  for (const row of rows) {
    const sum = totals.get(row.key) ?? { key: row.key };
    for (const [field, value] of Object.entries(row)) {
      if (typeof value === "number") sum[field] = ((sum[field] as number | undefined) ?? 0) + value;
    }
    totals.set(row.key, sum);
    costs.set(row.key, (costs.get(row.key) ?? 0n) + (parseMoney(row.cost) ?? 0n));
  }
  for (const [key, pico] of costs) totals.get(key)!.cost = formatMoney(pico);
  const out = [...totals.values()] as UsageRow[];
  const spent = (row: UsageRow) => costs.get(row.key)!;
  return byDay
    ? out.sort((a, b) => a.key.localeCompare(b.key))
    : out.sort((a, b) =>
      spent(b) > spent(a) ? 1 : spent(b) < spent(a) ? -1 : b.total_tokens - a.total_tokens || a.key.localeCompare(b.key)
    );
}

function metricOf(row: UsageRow, metric: string): number {
  return metric === "requests" ? row.requests : metric === "cost" ? Number(row.cost) : row.total_tokens;
}

async function usagePage(c: ConsoleRequest): Promise<Response> {
  const query = queryOf(c);
  const tokens = await c.service.listTokens();
  const names = new Map(tokens.map((t) => [t.id, t]));
  const { rows, range, notice, status } = await pageUsage(c, query);
  const totals = totalsOf(rows, query.by === "day");
  const currency = c.deps.config.currency;
  const priced = pricing(c.deps.config, rows);
  const metric = query.metric === "cost" && !priced ? "tokens" : query.metric;
  const days = daysBetween(range.since, range.until, CHART_DAYS);
  const series = new Map<string, number[]>();
  for (const row of rows) {
    const key = query.by === "day" ? "all" : row.key;
    const values = series.get(key) ?? days.map(() => 0);
    const at = days.indexOf(row.day ?? "");
    if (at >= 0) values[at] += metricOf(row, metric);
    series.set(key, values);
  }
  const label = (key: string): HtmlValue => {
    const token = query.by === "token" ? names.get(key) : undefined;
    return token ? html`${tokenLink(token)} <code class="muted">${key}</code>` : key;
  };
  const seriesName = (key: string) => query.by === "token" && names.get(key) ? `${names.get(key)!.name} (${key})` : key;
  const chart = barChart({
    wide: true,
    days,
    series: [...series].map(([key, values]) => ({ name: query.by === "day" ? "all" : seriesName(key), values })),
    unit: metric === "cost" ? currency : metric,
    format: metric === "cost" ? (value) => money(value, currency).split(" ")[0] : undefined,
    label: `${metric === "requests" ? "Requests" : metric === "cost" ? "Cost" : "Tokens"} per day${
      query.by === "day" ? "" : ` by ${query.by}`
    }`,
  });
  const params = new URLSearchParams({ by: query.by, since: range.since, until: range.until });
  if (query.name) params.set("name", query.name);
  const quick = [1, 7, 30, 90].map((n) => {
    const span = lastDays(c.now, n);
    const link = new URLSearchParams({ by: query.by, since: span[0], until: span[n - 1], metric });
    return html`<a href="/ui/usage?${link.toString()}">${n === 1 ? "today" : `${n} days`}</a>`;
  });
  const form = html`<form method="get" action="/ui/usage" class="filters">
<label>By ${select("by", BY, query.by)}</label>
<label>From <input type="date" name="since" value="${range.since}"></label>
<label>To <input type="date" name="until" value="${range.until}"></label>
<label>Only <input name="name" value="${query.name ?? ""}" placeholder="a token id, owner, group, model..."></label>
<label>Chart ${select("metric", priced ? ["tokens", "requests", "cost"] : ["tokens", "requests"], metric)}</label>
<button type="submit">Show</button> <span class="quick">${quick}</span></form>`;
  const body = html`
    ${form}${chart}
    <p
      class="muted">${range.since} to ${range.until} (UTC days). <a href="/ui/usage.csv?${params
        .toString()}" download>Download CSV</a> (one row per day and ${query.by}).</p>
    ${usageTable(totals, label, {
      empty: "No usage in this range. Requests are counted a second or so after they finish.",
      currency: priced ? currency : undefined,
    })}
  `;
  return pageResponse({ title: "Usage", nav: "/ui/usage", body, notice }, status);
}

/** A CSV cell: quoted, quotes doubled, and a leading formula character defused so a spreadsheet shows it as text. */
function csvCell(value: unknown): string {
  const text = String(value ?? "");
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return `"${safe.replaceAll('"', '""')}"`;
}

async function usageCsv(c: ConsoleRequest): Promise<Response> {
  const query = queryOf(c);
  const result = await dailyUsage(c, query);
  // The counts, then the totals, as the admin API's rows read; cost is an exact decimal string in `currency`.
  const fields = [...COUNTERS.filter((counter) => counter !== "cost"), "total_tokens", "cost"];
  const lines = [["day", query.by, ...fields].map(csvCell).join(",")];
  for (const row of result.data) {
    const record = row as unknown as Record<string, unknown>;
    lines.push([row.day, row.key, ...fields.map((field) => record[field] ?? 0)].map(csvCell).join(","));
  }
  const file = `modelgate-usage-by-${query.by}-${result.since}-to-${result.until}.csv`;
  return new Response(lines.join("\r\n") + "\r\n", {
    headers: { "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="${file}"` },
  });
}

/** The usage page's routes. */
export const USAGE_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/usage", handle: usagePage },
  { method: "GET", path: "/usage.csv", handle: usageCsv },
];

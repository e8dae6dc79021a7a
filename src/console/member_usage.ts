/**
 * @module A member's own usage and spend over a chosen range of UTC days: totals, a chart per day by token, and a
 * table per token, read through the admin service scoped to the member (so only their tokens are counted).
 */
import { formatMoney, parseMoney } from "../core/money.ts";
import type { UsageRow } from "../usage/query.ts";
import { barChart } from "./chart.ts";
import type { ConsoleRequest, ConsoleRoute } from "./context.ts";
import { amount, daysBetween, lastDays, money } from "./format.ts";
import { html, type HtmlValue } from "./html.ts";
import { memberResponse, MY_USAGE, operatorsInstead } from "./member_nav.ts";
import { pageUsage, totalsOf } from "./usage.ts";
import { cards, pricing, usageTable } from "./widgets.ts";

/** The chart's longest axis, as on the operator's usage page. */
const CHART_DAYS = 92;

async function usagePage(c: ConsoleRequest): Promise<Response> {
  const q = c.url.searchParams;
  const week = lastDays(c.now, 7);
  const asked = { since: q.get("since") || week[0], until: q.get("until") || week[6] };
  const tokens = new Map((await c.service.listTokens()).map((t) => [t.id, t]));
  const { rows, range, notice, status } = await pageUsage(c, { by: "token", ...asked });
  const currency = c.deps.config.currency;
  const priced = pricing(c.deps.config, rows);
  const totals = totalsOf(rows, false);
  const sum = (pick: (row: UsageRow) => number) => totals.reduce((n, row) => n + pick(row), 0);
  const spent = totals.reduce((pico, row) => pico + (parseMoney(row.cost) ?? 0n), 0n);
  const name = (id: string) => tokens.get(id)?.name ?? id;
  const days = daysBetween(range.since, range.until, CHART_DAYS);
  const series = new Map<string, number[]>();
  for (const row of rows) {
    const values = series.get(row.key) ?? days.map(() => 0);
    const at = days.indexOf(row.day ?? "");
    if (at >= 0) values[at] += row.total_tokens;
    series.set(row.key, values);
  }
  const quick = [7, 30, 90].map((n) => {
    const span = lastDays(c.now, n);
    return html`<a href="${MY_USAGE}?since=${span[0]}&amp;until=${span[n - 1]}">${n} days</a>`;
  });
  const label = (id: string): HtmlValue => html`${name(id)} <code class="muted">${id}</code>`;
  const body = html`
    <form method="get" action="${MY_USAGE}" class="filters">
      <label>From <input type="date" name="since" value="${range.since}"></label>
      <label>To <input type="date" name="until" value="${range.until}"></label>
      <button type="submit">Show</button> <span class="quick">${quick}</span>
    </form>
    ${cards([
      { label: "Requests", value: amount(sum((row) => row.requests), "requests") },
      { label: "Tokens", value: amount(sum((row) => row.total_tokens), "tokens") },
      ...priced ? [{ label: "Spend", value: money(formatMoney(spent), currency) }] : [],
    ])}
    ${barChart({
      wide: true,
      days,
      series: [...series].map(([id, values]) => ({ name: name(id), values })),
      unit: "tokens",
      label: "My tokens per day, by token",
    })}
    <p class="muted">${range.since} to ${range.until} (UTC days), all of your tokens, revoked ones included.</p>
    ${usageTable(totals, label, {
      empty: "No usage in this range. Requests are counted a second or so after they finish.",
      currency: priced ? currency : undefined,
    })}
  `;
  return memberResponse(c, { title: "My usage", nav: MY_USAGE, body, notice }, status);
}

/** A member's usage route; an operator is sent to the usage page. */
export const MEMBER_USAGE_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/my/usage", member: true, handle: (c) => operatorsInstead(c, "/ui/usage") ?? usagePage(c) },
];

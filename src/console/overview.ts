/**
 * @module The overview: requests, errors, tokens and (when the gateway prices requests) cost today and over seven
 * days, requests and tokens per day by model as charts, and every deployment's health.
 */
import { formatMoney, parseMoney } from "../core/money.ts";
import { healthReport } from "../observe/ops.ts";
import type { UsageRow } from "../usage/query.ts";
import { barChart } from "./chart.ts";
import type { ConsoleRequest, ConsoleRoute } from "./context.ts";
import { amount, lastDays, money, percent } from "./format.ts";
import { html } from "./html.ts";
import { pageResponse } from "./page.ts";
import { healthBoard } from "./upstreams.ts";
import { cards, pricing } from "./widgets.ts";

/** What some rows add up to; the cost exactly, as a decimal string. */
interface Sum {
  requests: number;
  errors: number;
  tokens: number;
  unpriced: number;
  cost: string;
}

function sum(rows: readonly UsageRow[]): Sum {
  const out = { requests: 0, errors: 0, tokens: 0, unpriced: 0 };
  let pico = 0n;
  for (const row of rows) {
    out.requests += row.requests;
    out.errors += row.errors;
    out.tokens += row.total_tokens;
    out.unpriced += row.unpriced;
    pico += parseMoney(row.cost) ?? 0n;
  }
  return { ...out, cost: formatMoney(pico) };
}

/** Per-model series over `days` of one figure of the rows. */
function byModel(rows: readonly UsageRow[], days: string[], value: (row: UsageRow) => number) {
  const series = new Map<string, number[]>();
  for (const row of rows) {
    const values = series.get(row.key) ?? days.map(() => 0);
    const at = days.indexOf(row.day ?? "");
    if (at >= 0) values[at] += value(row);
    series.set(row.key, values);
  }
  return [...series].map(([name, values]) => ({ name, values }));
}

async function overviewPage(c: ConsoleRequest): Promise<Response> {
  const days = lastDays(c.now, 7);
  const today = days[6];
  const { data } = await c.service.usage({ by: "model", since: days[0], until: today, per: "day" });
  const week = sum(data);
  const now = sum(data.filter((row) => row.day === today));
  const tokensOf = (model: string) => sum(data.filter((row) => row.key === model)).tokens;
  const figures = [
    {
      label: "Requests today",
      value: amount(now.requests, "requests"),
      detail: `${amount(week.requests, "requests")} in 7 days`,
    },
    {
      label: "Errors today",
      value: `${amount(now.errors, "errors")}`,
      detail: `${now.requests > 0 ? `${percent(now.errors, now.requests)} of today's requests · ` : ""}${
        amount(week.errors, "errors")
      } in 7 days`,
    },
    {
      label: "Tokens today",
      value: amount(now.tokens, "tokens"),
      detail: `${amount(week.tokens, "tokens")} in 7 days`,
    },
  ];
  const currency = c.deps.config.currency;
  if (pricing(c.deps.config, data)) {
    const unpriced = week.unpriced > 0 ? ` · ${amount(week.unpriced, "requests")} without a price` : "";
    figures.push({
      label: "Cost today",
      value: money(now.cost, currency),
      detail: `${money(week.cost, currency)} in 7 days${unpriced}`,
    });
  }
  // The same model gets the same colour in both charts: the most tokens first.
  const order = [...new Set(data.map((row) => row.key))].sort((a, b) =>
    tokensOf(b) - tokensOf(a) || a.localeCompare(b)
  );
  const requests = barChart({
    days,
    order,
    series: byModel(data, days, (row) => row.requests),
    unit: "requests",
    label: "Requests per day by model, last 7 days",
  });
  const tokens = barChart({
    days,
    order,
    series: byModel(data, days, (row) => row.total_tokens),
    unit: "tokens",
    label: "Tokens per day by model, last 7 days",
  });
  const body = html`${cards(figures)}<div class="columns">${requests}${tokens}</div>
<h2>Deployment health <span class="muted">(this instance's view, as <code>GET /healthz</code> shows it)</span></h2>
${healthBoard(healthReport(c.deps)().upstreams)}
<p class="muted">Today is the UTC day ${today}. <a href="/ui/usage">Usage by token, group, model or session</a> ·
<a href="/ui/requests">The latest requests</a></p>`;
  return pageResponse({ title: "Overview", nav: "/ui/", body });
}

/** The overview's route. */
export const OVERVIEW_ROUTES: readonly ConsoleRoute[] = [{ method: "GET", path: "/", handle: overviewPage }];

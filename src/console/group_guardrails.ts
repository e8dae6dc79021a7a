/**
 * @module A group's guardrails on its console page: each rule it applies (what it detects or asks, where, and what it
 * does) and a chart of the hits per rule per day over the last two weeks, read from the group's request log.
 */
import type { GuardrailConfig } from "../core/guardrail_config.ts";
import { barChart, type Series } from "./chart.ts";
import type { ConsoleRequest } from "./context.ts";
import { lastDays } from "./format.ts";
import { type Html, html } from "./html.ts";
import { table } from "./widgets.ts";

const DAYS = 14;
/** The most log entries read for the chart: a page view must stay cheap, and the chart says when it was reached. */
const ENTRIES = 1000;

function detects(rule: GuardrailConfig): string {
  if (rule.webhook) return `webhook ${new URL(rule.webhook.url).host} (on error: ${rule.webhook.on_error})`;
  return (rule.detect ?? []).map((item) => typeof item === "string" ? item : `${item.kind} (pattern)`).join(", ");
}

/** The group's rules and their hits; nothing when the group has none. */
export async function groupGuardrails(
  c: ConsoleRequest,
  { name: group, guardrails: names = [] }: { name: string; guardrails?: readonly string[] },
): Promise<Html> {
  if (names.length === 0) return html``;
  // A group made through the admin API may name a rule the config has since dropped (its requests are refused):
  // the table shows the rules there are.
  const rules = names.flatMap((name) => c.deps.config.guardrails.filter((rule) => rule.name === name));
  const rows = rules.map((rule) =>
    html`
      <tr>
        <td>${rule.name}</td>
        <td class="wrap">${detects(rule)}</td>
        <td>${rule.scope.join(", ")}</td>
        <td>${rule.webhook ? "ask" : `${rule.action}${rule.restore ? ", restore" : ""}`}</td>
      </tr>
    `
  );
  const days = lastDays(c.now, DAYS);
  const { data } = await c.service.requests({ group, since: `${DAYS}d`, limit: ENTRIES });
  const hits = new Map<string, number[]>(names.map((name) => [name, days.map(() => 0)]));
  for (const entry of data) {
    const at = days.indexOf(entry.time.slice(0, 10));
    for (const hit of entry.guardrails ?? []) {
      const values = hits.get(hit.rule);
      if (values && at !== -1) values[at] += hit.count;
    }
  }
  const series: Series[] = [...hits].map(([name, values]) => ({ name, values }));
  const chart = barChart({
    days,
    series,
    unit: "hits",
    label: "Guardrail hits per rule per day",
    order: names,
    wide: true,
  });
  const bound = data.length >= ENTRIES
    ? html`<p class="muted">Counted over the group's latest ${ENTRIES} requests, which do not reach back 14 days.</p>`
    : html``;
  return html`<section class="panel"><h2>Guardrails</h2>${
    table(["Rule", "Detects", "Scope", "Action"], rows, "No rules.", "guardrails")
  }${chart}${bound}</section>`;
}

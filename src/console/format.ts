/**
 * @module How the console writes numbers, units, times and limits: whole numbers grouped, large ones shortened with
 * the unit beside them, times as `<time>` in UTC that the page's script shows in the operator's time zone.
 */
import { LIMIT_FIELDS as LIMITS } from "../access/limits.ts";
import type { Limits } from "../core/config.ts";
import type { TokenRecord } from "../core/principal.ts";
import { type Html, html } from "./html.ts";

const GROUPED = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const SHORT = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });

/** `12,345`. */
export function count(n: number): string {
  return GROUPED.format(n);
}

/** `1.2M tokens`, `1 request`: a short number with its unit, singular for one. */
export function amount(n: number, unit: string): string {
  return `${n < 10_000 ? GROUPED.format(n) : SHORT.format(n)} ${n === 1 ? unit.replace(/s$/, "") : unit}`;
}

/** `340 ms`, `2.5 s`, or a dash when unknown. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "–";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** A configured time span: `500 ms`, `45 s`, `10 min`. */
export function span(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  return ms < 120_000 || ms % 60_000 !== 0 ? `${count(ms / 1000)} s` : `${count(ms / 60_000)} min`;
}

/** `2.1%` of `whole`, or a dash when there is nothing to divide. */
export function percent(part: number, whole: number): string {
  if (whole <= 0) return "–";
  const value = (part / whole) * 100;
  return `${value < 10 && value > 0 ? value.toFixed(1) : Math.round(value)}%`;
}

const CENTS = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const SMALL = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 2 });

/** `12.35 USD`, `0.0084 USD`: a cost (an exact decimal string, or a sum) rounded for reading, with its currency. */
export function money(value: string | number, currency: string): string {
  const n = Number(value);
  return `${n === 0 ? "0" : n < 1 ? SMALL.format(n) : CENTS.format(n)} ${currency}`;
}

/**
 * A moment as `<time>`: UTC on the server, rewritten by the page's script into the operator's own time zone;
 * `recent` ones (the request log) show the time to the second, and the date only when it is not today.
 */
export function moment(iso: string | null | undefined, fallback = "never", recent = false): Html {
  if (!iso) return html`<span class="muted">${fallback}</span>`;
  const utc = `${iso.slice(0, recent ? 19 : 16).replace("T", " ")} UTC`;
  return html`<time datetime="${iso}" title="${iso}" ${recent ? "data-recent" : ""}>${utc}</time>`;
}

/** A limit's unit: `tokens/day`, or for a budget in money `USD/day` in the config's currency. */
export function limitUnit(field: keyof Limits, currency: string): string {
  const { unit, window } = LIMITS[field];
  const words: Partial<Record<typeof unit, string>> = { tool_calls: "tool calls", mcp_requests: "MCP requests" };
  const what = unit === "cost" ? currency : words[unit] ?? unit;
  return `${what}/${window === "minute" ? "min" : window}`;
}

/** The limit fields in the order forms and tables show them. */
export const LIMIT_FIELDS = Object.keys(LIMITS) as (keyof Limits)[];

/** `60 requests/min · 1M tokens/day · 25 USD/day`, or a dash for none. */
export function limitsText(limits: Limits | undefined, currency: string): string {
  const parts = LIMIT_FIELDS
    .filter((field) => limits?.[field] !== undefined)
    .map((field) => {
      const value = limits![field]!;
      return `${field.startsWith("cost_") ? String(value) : amount(value, "").trim()} ${limitUnit(field, currency)}`;
    });
  return parts.join(" · ") || "–";
}

/** Where a token stands at `now`: active, revoked (disabled) or expired. */
export function tokenStatus(token: TokenRecord, now: Date): "active" | "revoked" | "expired" {
  if (token.disabled) return "revoked";
  return token.expires_at && Date.parse(token.expires_at) <= now.getTime() ? "expired" : "active";
}

/** A status as a coloured badge; `tone` picks the colour (ok, warn, bad, off). */
export function badge(text: string, tone: "ok" | "warn" | "bad" | "off"): Html {
  return html`<span class="badge ${tone}">${text}</span>`;
}

/** The UTC day of `at` and of the days before it, oldest first: `days(now, 7)` is this week's chart axis. */
export function lastDays(now: Date, n: number): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: n }, (_, i) => new Date(today - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

/** Every UTC day from `since` to `until`, both included, at most `max` of them (the latest). */
export function daysBetween(since: string, until: string, max: number): string[] {
  const start = Date.parse(`${since}T00:00:00Z`);
  const end = Date.parse(`${until}T00:00:00Z`);
  const n = Math.min(max, Math.floor((end - start) / 86_400_000) + 1);
  return n > 0 ? lastDays(new Date(end), n) : [];
}

/**
 * @module One token's page: what it is, its edit form (name, group, expiry, limits), revoke or restore, its usage
 * per day this week and its latest requests; plus the token links and buttons the list page shares.
 */
import type { GatewayError } from "../core/errors.ts";
import { formatMoney, parseMoney } from "../core/money.ts";
import type { TokenRecord } from "../core/principal.ts";
import { barChart } from "./chart.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice, refusal } from "./context.ts";
import { badge, lastDays, limitsText, moment, money, tokenStatus } from "./format.ts";
import { readForm, tokenUpdateInput } from "./forms.ts";
import { type Html, html } from "./html.ts";
import { pageResponse, redirect } from "./page.ts";
import { logHead, logRows, logView } from "./requests.ts";
import { expiryInput, limitInputs, pricing, select, table } from "./widgets.ts";

/** The path of a token's page. */
function tokenPath(id: string): string {
  return `/ui/tokens/${encodeURIComponent(id)}`;
}

/** A token's link to its page, by name. */
export function tokenLink(token: Pick<TokenRecord, "id" | "name">): Html {
  return html`<a href="${tokenPath(token.id)}">${token.name}</a>`;
}

/** Who a token belongs to: its owner's email, or a muted dash for a token made for no one in particular. */
export function ownerCell(token: TokenRecord): Html {
  return token.owner ? html`${token.owner}` : html`<span class="muted" title="made without an owner">–</span>`;
}

/** A token's status as a badge. */
export function statusBadge(token: TokenRecord, now: Date): Html {
  const status = tokenStatus(token, now);
  return badge(status, status === "active" ? "ok" : status === "expired" ? "warn" : "off");
}

/** The revoke or restore button of a token; `back` says which page to return to. */
export function revokeButton(token: TokenRecord, back: "list" | "token"): Html {
  const action = token.disabled ? "restore" : "revoke";
  return html`<form method="post" action="${tokenPath(token.id)}/${action}" class="inline">
<input type="hidden" name="back" value="${back}"><button type="submit" class="${token.disabled ? "" : "danger"}">${
    token.disabled ? "Restore" : "Revoke"
  }</button></form>`;
}

async function detailPage(c: ConsoleRequest, failed?: { values: URLSearchParams; error: GatewayError }) {
  const id = c.params.id;
  // First, so an id that names no token is a 404 rather than a filter's refusal.
  const token = await c.service.getToken(id);
  const [groups, usage, log, tokens] = await Promise.all([
    c.service.listGroups(),
    c.service.usage({ by: "token", name: id, since: "7d", per: "day" }),
    c.service.requests({ token: id, limit: 20 }),
    c.service.listTokens(),
  ]);
  const values = failed?.values;
  const days = lastDays(c.now, 7);
  const byDay = new Map(usage.data.map((row) => [row.day, row]));
  const view = logView(c, tokens, log.data);
  const currency = c.deps.config.currency;
  const week = usage.data.reduce((pico, row) => pico + (parseMoney(row.cost) ?? 0n), 0n);
  const spend = pricing(c.deps.config, usage.data)
    ? html`
      <dt>Cost, 7 days</dt>
      <dd>${money(formatMoney(week), currency)}</dd>
    `
    : "";
  const chart = barChart({
    wide: true,
    days,
    series: [{ name: token.name, values: days.map((day) => byDay.get(day)?.total_tokens ?? 0) }],
    unit: "tokens",
    label: "Tokens per day, last 7 days",
  });
  const body = html`
    <div class="columns">
      <section class="panel">
        <dl class="facts">
          <dt>ID</dt>
          <dd><code>${token.id}</code></dd>
          <dt>Status</dt>
          <dd>${statusBadge(token, c.now)} ${revokeButton(token, "token")}</dd>
          <dt>Group</dt>
          <dd>${token.group}</dd>
          <dt>Owner</dt>
          <dd>${ownerCell(token)}</dd>
          <dt>Created</dt>
          <dd>${moment(token.created_at)}</dd>
          <dt>Expires</dt>
          <dd>${moment(token.expires_at)}</dd>
          <dt>Limits</dt>
          <dd>${limitsText(token.limits, c.deps.config.currency)}</dd>
          ${spend}
        </dl>
      </section>
      <section class="panel">
        <h2>Edit</h2>
        <form method="post" action="${tokenPath(token.id)}" class="grid">
    <label>Name<input name="name" maxlength="100" value="${values?.get("name") ?? token.name}"></label>
    <label>Group ${select("group", groups.map((g) => g.name), values?.get("group") ?? token.group)}</label>
    ${expiryInput(token.expires_at, true)}
    ${limitInputs(values, token.limits, c.deps.config.currency)}
    <div class="actions"><button type="submit" class="primary">Save</button></div></form>
      </section>
    </div>
    ${chart}
    <h2>Latest requests</h2>${table(
      logHead(view),
      logRows(log.data, view),
      "This token has sent no requests yet.",
    )}
    <p><a href="/ui/requests?token=${encodeURIComponent(token.id)}">All of its requests in the log</a> ·
    <a href="/ui/usage?by=token&amp;name=${encodeURIComponent(token.id)}">Its usage over any range</a></p>
  `;
  const notice = failed ? { text: failed.error.message, tone: "bad" as const } : doneNotice(c.url);
  return pageResponse({ title: `Token ${token.name}`, nav: "/ui/tokens", body, notice }, failed?.error.status ?? 200);
}

async function update(c: ConsoleRequest): Promise<Response> {
  const form = await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  try {
    await c.service.updateToken(c.params.id, tokenUpdateInput(form));
  } catch (err) {
    const refused = refusal(err);
    if (refused && refused.status !== 404) return detailPage(c, { values: form, error: refused });
    throw err;
  }
  return redirect(`${tokenPath(c.params.id)}?done=saved`);
}

/** Revokes or restores, then goes back to the page the button was on. */
function toggle(disabled: boolean) {
  return async (c: ConsoleRequest): Promise<Response> => {
    const form = await readForm(c.req, c.deps.config.body_idle_timeout_ms);
    const id = c.params.id;
    if (disabled) await c.service.revokeToken(id);
    else await c.service.updateToken(id, { disabled: false });
    const done = disabled ? "revoked" : "restored";
    return redirect(form.get("back") === "token" ? `${tokenPath(id)}?done=${done}` : `/ui/tokens?done=${done}`);
  };
}

/** A token's own routes. */
export const TOKEN_DETAIL_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/tokens/:id", handle: (c) => detailPage(c) },
  { method: "POST", path: "/tokens/:id", handle: update },
  { method: "POST", path: "/tokens/:id/revoke", handle: toggle(true) },
  { method: "POST", path: "/tokens/:id/restore", handle: toggle(false) },
];

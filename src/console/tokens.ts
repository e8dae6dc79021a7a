/**
 * @module The tokens page: the list with filters, each token's last seven days and its revoke or restore button,
 * and the form that creates a token and shows its secret exactly once. Every change goes through the admin service.
 */
import type { GatewayError } from "../core/errors.ts";
import type { TokenRecord } from "../core/principal.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice, refusal } from "./context.ts";
import { amount, limitsText, moment, tokenStatus } from "./format.ts";
import { readForm, tokenCreateInput } from "./forms.ts";
import { type Html, html } from "./html.ts";
import { pageResponse } from "./page.ts";
import { ownerCell, revokeButton, statusBadge, tokenLink } from "./token_detail.ts";
import { costCell, expiryInput, limitInputs, pricing, secretPanel, select, table } from "./widgets.ts";

const STATUSES = ["active", "revoked", "expired"];

/** The form for a new token, filled from `values` after a failed attempt. */
function createForm(groups: string[], values: URLSearchParams | undefined, currency: string): Html {
  return html`
    <details class="panel" ${values ? "open" : ""}>
      <summary>New token</summary>
      <form method="post" action="/ui/tokens" class="grid">
    <label>Group ${select("group", groups, values?.get("group") ?? groups[0])}</label>
    <label>Name <span class="muted">(optional)</span><input name="name" maxlength="100" value="${values?.get("name") ??
      ""}"></label>
    <label>Owner <span class="muted">(optional: the person's email)</span><input name="owner" type="email"
      maxlength="254" value="${values?.get("owner") ?? ""}"></label>
    ${expiryInput(undefined, false)}
    ${limitInputs(values, undefined, currency)}
    <div class="actions"><button type="submit" class="primary">Create token</button></div></form>
    </details>
  `;
}

async function listPage(c: ConsoleRequest, failed?: { values: URLSearchParams; error: GatewayError }) {
  const q = c.url.searchParams;
  const group = q.get("group") || undefined;
  const status = q.get("status") || undefined;
  const search = q.get("q")?.trim().toLowerCase() || undefined;
  const [tokens, groups, usage] = await Promise.all([
    c.service.listTokens(group),
    c.service.listGroups(),
    c.service.usage({ by: "token", since: "7d" }),
  ]);
  const used = new Map(usage.data.map((row) => [row.key, row]));
  const shown = tokens
    .filter((t) => !status || tokenStatus(t, c.now) === status)
    .filter((t) => !search || [t.name, t.id, t.owner ?? ""].some((text) => text.toLowerCase().includes(search)))
    .sort((a, b) => b.created_at.localeCompare(a.created_at));
  const groupNames = groups.map((g) => g.name);
  const currency = c.deps.config.currency;
  const priced = pricing(c.deps.config, usage.data);
  const rows = shown.map((t) => {
    const week = used.get(t.id);
    return html`
      <tr>
        <td>${tokenLink(t)}<div class="muted small"><code>${t.id}</code></div></td>
        <td>${t.group}</td>
        <td>${ownerCell(t)}</td>
        <td>${statusBadge(t, c.now)}</td>
        <td>${moment(t.created_at)}</td>
        <td>${moment(t.expires_at)}</td>
        <td>${limitsText(t.limits, c.deps.config.currency)}</td>
        <td class="num">${week ? amount(week.requests, "requests") : "–"}</td>
        <td class="num">${week ? amount(week.total_tokens, "tokens") : "–"}</td>
        ${priced ? week ? costCell(week.cost, week.unpriced, currency) : html`<td class="num">–</td>` : ""}
        <td>${revokeButton(t, "list")}</td>
      </tr>
    `;
  });
  const filters = html`<form method="get" action="/ui/tokens" class="filters">
<label>Search <input name="q" value="${q.get("q") ?? ""}" placeholder="name, id or owner"></label>
<label>Group ${select("group", groupNames, group, "any")}</label>
<label>Status ${select("status", STATUSES, status, "any")}</label>
<button type="submit">Filter</button>${
    group || status || search
      ? html`
        <a href="/ui/tokens">Clear</a>
      `
      : ""
  }</form>`;
  const empty = tokens.length === 0
    ? "No tokens yet. Create one above; its secret is shown once."
    : "No token matches these filters.";
  const body = html`${createForm(groupNames, failed?.values, c.deps.config.currency)}${filters}
<p class="muted">${shown.length} of ${tokens.length} tokens. Requests, tokens${
    priced ? " and cost" : ""
  } are the last 7 days.</p>
${
    table(
      [
        "Name and ID",
        "Group",
        "Owner",
        "Status",
        "Created",
        "Expires",
        "Limits",
        "Requests",
        "Tokens",
        ...priced ? ["Cost"] : [],
        "",
      ],
      rows,
      empty,
      "tokens",
    )
  }`;
  const notice = failed ? { text: failed.error.message, tone: "bad" as const } : doneNotice(c.url);
  return pageResponse({ title: "Tokens", nav: "/ui/tokens", body, notice }, failed?.error.status ?? 200);
}

/** The one page that shows a new token's secret; it is not kept anywhere and cannot be shown again. */
function createdPage(token: TokenRecord, secret: string, currency: string): Response {
  const body = secretPanel(secret, {
    facts: [
      ["Name", tokenLink(token)],
      ["ID", html`<code>${token.id}</code>`],
      ["Group", token.group],
      ["Owner", ownerCell(token)],
      ["Expires", moment(token.expires_at)],
      ["Limits", limitsText(token.limits, currency)],
    ],
    send: html`Clients send it as <code>x-api-key</code> or <code>Authorization: Bearer</code>.`,
    back: html`<a href="/ui/tokens">Back to tokens</a>`,
  });
  return pageResponse({ title: "Token created", nav: "/ui/tokens", body }, 201);
}

async function create(c: ConsoleRequest): Promise<Response> {
  const form = await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  try {
    const { token, secret } = await c.service.createToken(tokenCreateInput(form));
    return createdPage(token, secret, c.deps.config.currency);
  } catch (err) {
    const refused = refusal(err);
    if (refused) return listPage(c, { values: form, error: refused });
    throw err;
  }
}

/** The tokens page's routes. */
export const TOKEN_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/tokens", handle: (c) => listPage(c) },
  { method: "POST", path: "/tokens", handle: create },
];

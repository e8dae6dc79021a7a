/**
 * @module A member's own tokens: the list with each one's last seven days and its revoke button, and the form that
 * creates one in a group they may use and shows its secret exactly once. The admin service, scoped to the member,
 * decides what they may see and do; these pages only show it.
 */
import type { GatewayError } from "../core/errors.ts";
import type { Group, TokenRecord } from "../core/principal.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice, refusal } from "./context.ts";
import { amount, limitsText, moment, tokenStatus } from "./format.ts";
import { readForm, tokenCreateInput } from "./forms.ts";
import { type Html, html } from "./html.ts";
import { memberResponse, MY_TOKENS, MY_USAGE, operatorsInstead } from "./member_nav.ts";
import { redirect } from "./page.ts";
import { statusBadge } from "./token_detail.ts";
import { costCell, expiryInput, limitInputs, pricing, secretPanel, select, table } from "./widgets.ts";

/** The form for a new token in one of `groups`, filled from `values` after a failed attempt. */
function createForm(c: ConsoleRequest, groups: Group[], values: URLSearchParams | undefined, open: boolean): Html {
  const currency = c.deps.config.currency;
  const { default_days, max_days } = c.deps.config.auth.personal_tokens;
  if (groups.length === 0) {
    return html`<p class="panel muted">You may not create tokens: your role names no group for them. Ask an operator.</p>`;
  }
  const capped = groups.filter((group) => group.limits && Object.keys(group.limits).length > 0);
  const caps = capped.length === 0
    ? "None of your groups sets limits."
    : `A group's limits apply to every token in it, and a limit of your own may only be lower: ${
      capped.map((group) => `${group.name}: ${limitsText(group.limits, currency)}`).join("; ")
    }.`;
  return html`
    <details class="panel" ${open ? "open" : ""}>
      <summary>New token</summary>
      <p class="muted">It will be yours: it names you as its owner. Without an expiry it lasts ${default_days} days; the
      latest you may choose is ${max_days} days away. ${caps}</p>
      <form method="post" action="${MY_TOKENS}" class="grid">
    <label>Group ${select("group", groups.map((group) => group.name), values?.get("group") ?? groups[0].name)}</label>
    <label>Name <span class="muted">(optional)</span><input name="name" maxlength="100" value="${values?.get("name") ??
      ""}"></label>
    ${expiryInput(undefined, false)}
    ${limitInputs(values, undefined, currency)}
    <div class="actions"><button type="submit" class="primary">Create token</button></div></form>
    </details>
  `;
}

/** The revoke button of an active token of the member's. */
function revokeButton(token: TokenRecord, c: ConsoleRequest): Html {
  if (tokenStatus(token, c.now) !== "active") return html``;
  return html`<form method="post" action="${MY_TOKENS}/${encodeURIComponent(token.id)}/revoke" class="inline">
<button type="submit" class="danger">Revoke</button></form>`;
}

/** The list; after a refused form, its message, and (for a refused new token) the form filled as it was sent. */
async function listPage(c: ConsoleRequest, failed?: { values?: URLSearchParams; error: GatewayError }) {
  const [tokens, groups, usage] = await Promise.all([
    c.service.listTokens(),
    c.service.listGroups(),
    c.service.usage({ by: "token", since: "7d" }),
  ]);
  const used = new Map(usage.data.map((row) => [row.key, row]));
  const currency = c.deps.config.currency;
  const priced = pricing(c.deps.config, usage.data);
  const rows = tokens.sort((a, b) => b.created_at.localeCompare(a.created_at)).map((t) => {
    const week = used.get(t.id);
    return html`
      <tr>
        <td>${t.name}<div class="muted small"><code>${t.id}</code></div></td>
        <td>${t.group}</td>
        <td>${statusBadge(t, c.now)}</td>
        <td>${moment(t.created_at)}</td>
        <td>${moment(t.expires_at)}</td>
        <td>${limitsText(t.limits, currency)}</td>
        <td class="num">${week ? amount(week.requests, "requests") : "–"}</td>
        <td class="num">${week ? amount(week.total_tokens, "tokens") : "–"}</td>
        ${priced ? week ? costCell(week.cost, week.unpriced, currency) : html`<td class="num">–</td>` : ""}
        <td>${revokeButton(t, c)}</td>
      </tr>
    `;
  });
  const head = ["Name and ID", "Group", "Status", "Created", "Expires", "Limits", "Requests", "Tokens"];
  const body = html`${createForm(c, groups, failed?.values, failed?.values !== undefined || tokens.length === 0)}
<p class="muted">${
    priced ? "Requests, tokens and cost" : "Requests and tokens"
  } are the last 7 days; <a href="${MY_USAGE}">more in My usage</a>.</p>
${
    table(
      [...head, ...priced ? ["Cost"] : [], ""],
      rows,
      "You have no tokens yet. Create one above; its secret is shown once.",
      "tokens",
    )
  }`;
  const notice = failed ? { text: failed.error.message, tone: "bad" as const } : doneNotice(c.url);
  return memberResponse(c, { title: "My tokens", nav: MY_TOKENS, body, notice }, failed?.error.status ?? 200);
}

/** The one page that shows a new token's secret, and how a client uses it with this gateway. */
function createdPage(c: ConsoleRequest, token: TokenRecord, secret: string): Response {
  const base = c.url.origin;
  const body = secretPanel(secret, {
    facts: [
      ["Name", token.name],
      ["ID", html`<code>${token.id}</code>`],
      ["Group", token.group],
      ["Expires", moment(token.expires_at)],
      ["Limits", limitsText(token.limits, c.deps.config.currency)],
    ],
    send: html`Clients send it as <code>x-api-key</code> or <code>Authorization: Bearer</code>, e.g. Claude Code with
      <code>ANTHROPIC_BASE_URL=${base}</code> and <code>ANTHROPIC_AUTH_TOKEN</code> set to it.`,
    back: html`<a href="${MY_TOKENS}">Back to my tokens</a>`,
  });
  return memberResponse(c, { title: "Token created", nav: MY_TOKENS, body }, 201);
}

async function create(c: ConsoleRequest): Promise<Response> {
  const form = await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  try {
    // The owner is the member, whatever the form says: the service sets it.
    const { token, secret } = await c.service.createToken({ ...tokenCreateInput(form), owner: undefined });
    return createdPage(c, token, secret);
  } catch (err) {
    const refused = refusal(err);
    if (refused) return listPage(c, { values: form, error: refused });
    throw err;
  }
}

async function revoke(c: ConsoleRequest): Promise<Response> {
  await c.req.body?.cancel();
  try {
    await c.service.revokeToken(c.params.id);
  } catch (err) {
    const refused = refusal(err);
    if (refused) return listPage(c, { error: refused });
    throw err;
  }
  return redirect(`${MY_TOKENS}?done=revoked`);
}

/** A member's token routes; an operator is sent to the tokens page, with nothing done. */
export const MEMBER_TOKEN_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/my/tokens", member: true, handle: (c) => operatorsInstead(c, "/ui/tokens") ?? listPage(c) },
  { method: "POST", path: "/my/tokens", member: true, handle: (c) => operatorsInstead(c, "/ui/tokens") ?? create(c) },
  {
    method: "POST",
    path: "/my/tokens/:id/revoke",
    member: true,
    handle: (c) => operatorsInstead(c, "/ui/tokens") ?? revoke(c),
  },
];

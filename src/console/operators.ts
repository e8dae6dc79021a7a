/**
 * @module The operator keys page: every personal admin API key with its role, expiry and state, the form that mints
 * one and shows its secret exactly once, and the revoke button. Every change goes through the admin service.
 */
import type { OperatorKey } from "../admin/operator_keys.ts";
import type { GatewayError } from "../core/errors.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice, refusal } from "./context.ts";
import { badge, moment } from "./format.ts";
import { operatorKeyInput, readForm } from "./forms.ts";
import { type Html, html } from "./html.ts";
import { pageResponse, redirect } from "./page.ts";
import { secretPanel, select, table } from "./widgets.ts";

const ROLES = ["admin", "viewer", "owner"];

function state(key: OperatorKey, now: Date): Html {
  if (key.revoked) return badge("revoked", "off");
  return Date.parse(key.expires_at) <= now.getTime() ? badge("expired", "warn") : badge("active", "ok");
}

function revokeButton(key: OperatorKey): Html | string {
  if (key.revoked) return "";
  return html`<form method="post" action="/ui/operators/${encodeURIComponent(key.id)}/revoke" class="inline">
<button type="submit" class="danger">Revoke</button></form>`;
}

/** The form for a new key, filled from `values` after a failed attempt. */
function mintForm(values: URLSearchParams | undefined): Html {
  return html`
    <details class="panel" ${values ? "open" : ""}>
      <summary>New operator key</summary>
      <form method="post" action="/ui/operators" class="grid">
        <label>Name <span class="muted">(the person, e.g. an email address)</span><input name="name" maxlength="100"
      required value="${values?.get("name") ?? ""}"></label>
        <label>Role ${select("role", ROLES, values?.get("role") ?? "admin")}</label>
        <label>Expires <span class="muted">(your time zone; empty: in 90 days)</span>
    <input type="datetime-local" name="expires_local" data-into="expires_at">
    <input type="hidden" name="expires_at"></label>
        <div class="actions"><button type="submit" class="primary">Mint key</button></div>
      </form>
    </details>
  `;
}

async function listPage(c: ConsoleRequest, failed?: { values: URLSearchParams; error: GatewayError }) {
  const keys = (await c.service.listOperatorKeys()).reverse();
  const rows = keys.map((key) =>
    html`
      <tr>
        <td>${key.name}<div class="muted small"><code>${key.id}</code></div></td>
        <td>${key.role}</td>
        <td>${state(key, c.now)}</td>
        <td>${moment(key.created_at)}<div class="muted small">by ${key.created_by}</div></td>
        <td>${moment(key.expires_at)}</td>
        <td><a href="/ui/audit?actor=${encodeURIComponent(key.id)}">Its changes</a></td>
        <td>${revokeButton(key)}</td>
      </tr>
    `
  );
  const body = html`${mintForm(failed?.values)}
<p class="muted">Personal keys for the admin API: each change made with one is recorded under its name. An owner may do
everything, an admin all but owner keys, a viewer only read.</p>
${table(["Name and ID", "Role", "State", "Created", "Expires", "", ""], rows, "No operator keys yet.", "operators")}`;
  const notice = failed ? { text: failed.error.message, tone: "bad" as const } : doneNotice(c.url);
  return pageResponse({ title: "Operator keys", nav: "/ui/operators", body, notice }, failed?.error.status ?? 200);
}

/** The one page that shows a new key's secret; it is not kept anywhere and cannot be shown again. */
function mintedPage(key: OperatorKey, secret: string): Response {
  const body = secretPanel(secret, {
    facts: [
      ["Name", key.name],
      ["ID", html`<code>${key.id}</code>`],
      ["Role", key.role],
      ["Expires", moment(key.expires_at)],
    ],
    send: html`Send it to the admin API as <code>Authorization: Bearer</code> or <code>x-api-key</code>.`,
    back: html`<a href="/ui/operators">Back to operator keys</a>`,
  });
  return pageResponse({ title: "Operator key minted", nav: "/ui/operators", body }, 201);
}

async function mint(c: ConsoleRequest): Promise<Response> {
  const form = await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  try {
    const { key, secret } = await c.service.createOperatorKey(operatorKeyInput(form));
    return mintedPage(key, secret);
  } catch (err) {
    const refused = refusal(err);
    if (refused) return listPage(c, { values: form, error: refused });
    throw err;
  }
}

async function revoke(c: ConsoleRequest): Promise<Response> {
  await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  await c.service.revokeOperatorKey(c.params.id);
  return redirect("/ui/operators?done=revoked-key");
}

/** The operator keys page's routes. */
export const OPERATOR_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/operators", handle: (c) => listPage(c) },
  { method: "POST", path: "/operators", handle: mint },
  { method: "POST", path: "/operators/:id/revoke", handle: revoke },
];

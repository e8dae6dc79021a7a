/**
 * @module The people page: everyone who signed in through the identity provider or was given a role, with the role
 * they have now and where it comes from, a form that gives a person a role (beating the config's rules) and a button
 * that removes it (their sessions end at their next page). Every change goes through the admin service.
 */
import type { PersonView } from "../admin/people_ops.ts";
import { PERSON_ROLES } from "../core/auth_config.ts";
import type { GatewayError } from "../core/errors.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice, refusal } from "./context.ts";
import { badge, moment } from "./format.ts";
import { field, readForm } from "./forms.ts";
import { type Html, html } from "./html.ts";
import { pageResponse, redirect } from "./page.ts";
import { select, table } from "./widgets.ts";

/** A role's badge: none is shown as refused. */
function roleBadge(person: PersonView): Html {
  if (person.role === null) return badge(person.source === "override" ? "removed" : "no rule", "off");
  return badge(person.role, person.role === "owner" || person.role === "admin" ? "warn" : "ok");
}

/** The form that gives `email` a role (or, without an email, asks for one). */
function roleForm(email: string | undefined, values: URLSearchParams | undefined, current?: PersonView): Html {
  const groups = values?.get("token_groups") ?? current?.token_groups.join(", ") ?? "";
  const role = values?.get("role") ?? current?.role ?? "viewer";
  if (email) {
    // One row of the table: the fields side by side, named for screen readers by the column.
    return html`<form method="post" action="/ui/people/${encodeURIComponent(email)}" class="person-role">
${select("role", PERSON_ROLES, role)}
<input name="token_groups" value="${groups}" placeholder="token groups" aria-label="Token groups" size="14">
<button type="submit">Set</button></form>`;
  }
  return html`
    <form method="post" action="/ui/people" class="grid">
      <label>Email <input type="email" name="email" required value="${values?.get("email") ?? ""}"></label>
      <label>Role ${select("role", PERSON_ROLES, role)}</label>
      <label>Token groups <span class="muted">(a member's, comma-separated)</span>
    <input name="token_groups" value="${groups}"></label>
      <div class="actions"><button type="submit" class="primary">Give role</button></div>
    </form>
  `;
}

function removeButton(person: PersonView): Html | string {
  if (person.role === null) return "";
  return html`<form method="post" action="/ui/people/${encodeURIComponent(person.email)}/remove" class="inline">
<button type="submit" class="danger">Remove role</button></form>`;
}

async function listPage(c: ConsoleRequest, failed?: { values: URLSearchParams; error: GatewayError }) {
  const people = await c.service.listPeople();
  const rows = people.map((person) =>
    html`
      <tr>
        <td>${person.email}${person.name ? html`<div class="muted small">${person.name}</div>` : ""}</td>
        <td>${roleBadge(person)}<div class="muted small">${person.source === "override"
          ? html`set by ${person.updated_by}`
          : "from the rules"}</div></td>
        <td>${person.token_groups.join(", ") || html`<span class="muted">–</span>`}</td>
        <td>${moment(person.signed_in_at)}</td>
        <td>${roleForm(person.email, undefined, person)}</td>
        <td>${removeButton(person)}</td>
      </tr>
    `
  );
  const body = html`
    <details class="panel" ${failed ? "open" : ""}>
      <summary>Give someone a role</summary>
      ${roleForm(undefined, failed?.values)}
    </details>
    <p class="muted">People sign in through the identity provider; the first rule of <code>auth.oidc.roles</code> they
    match gives their role, unless a role set here beats it. Removing a role ends their sessions at their next page, on
    every instance. Only an owner gives or takes the owner role.</p>
    ${table(
      ["Person", "Role", "Token groups", "Last sign-in", "Change", ""],
      rows,
      "Nobody has signed in yet.",
      "people",
    )}
  `;
  const notice = failed ? { text: failed.error.message, tone: "bad" as const } : doneNotice(c.url);
  return pageResponse({ title: "People", nav: "/ui/people", body, notice }, failed?.error.status ?? 200);
}

/** The role and token groups a form asks for, as the admin API takes them. */
function roleInput(form: URLSearchParams): Record<string, unknown> {
  const groups = (field(form, "token_groups") ?? "").split(",").map((g) => g.trim()).filter((g) => g !== "");
  return { role: field(form, "role"), token_groups: groups };
}

/** Sets the role of the person the path names, or of the form's email. */
async function setRole(c: ConsoleRequest): Promise<Response> {
  const form = await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  try {
    await c.service.setPersonRole(c.params.email ?? field(form, "email") ?? "", roleInput(form));
    return redirect("/ui/people?done=saved");
  } catch (err) {
    const refused = refusal(err);
    if (refused) return listPage(c, { values: form, error: refused });
    throw err;
  }
}

async function remove(c: ConsoleRequest): Promise<Response> {
  await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  await c.service.removePerson(c.params.email);
  return redirect("/ui/people?done=removed");
}

/** The people page's routes. */
export const PEOPLE_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/people", handle: (c) => listPage(c) },
  { method: "POST", path: "/people", handle: setRole },
  { method: "POST", path: "/people/:email", handle: setRole },
  { method: "POST", path: "/people/:email/remove", handle: remove },
];

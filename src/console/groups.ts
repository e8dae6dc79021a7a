/**
 * @module The groups page: every group with its models, listing shape, limits and tokens; the form that creates
 * one; and each group's page, an edit form for groups made here and a read-only view, with the reason, for groups
 * the config file defines. Every change goes through the admin service.
 */
import type { GatewayError } from "../core/errors.ts";
import type { Group } from "../core/principal.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice, refusal } from "./context.ts";
import { badge, count, limitsText } from "./format.ts";
import { groupInput, readForm } from "./forms.ts";
import { type Html, html } from "./html.ts";
import { groupGuardrails } from "./group_guardrails.ts";
import { pageResponse, redirect } from "./page.ts";
import { limitInputs, select, table } from "./widgets.ts";

const LISTINGS = ["anthropic", "openai", "auto"];
/** Why a config group cannot be changed here, in the service's own terms. */
const CONFIG_REASON = "Defined in the config file, which rewrites it at every start: edit it there and restart.";

function groupPath(name: string): string {
  return `/ui/groups/${encodeURIComponent(name)}`;
}

function isConfigGroup(c: ConsoleRequest, name: string): boolean {
  return c.deps.config.groups.some((group) => group.name === name);
}

/** Checkboxes for every model the config serves, ticked for `chosen`. */
function modelChoices(c: ConsoleRequest, chosen: readonly string[]): Html {
  const models = [...c.deps.table.models.keys()];
  for (const model of chosen) if (!models.includes(model)) models.push(model);
  return html`<fieldset class="models"><legend>Models</legend>${
    models.map((model) =>
      html`<label class="check"><input type="checkbox" name="models" value="${model}" ${
        chosen.includes(model) ? "checked" : ""
      }> ${model}</label>`
    )
  }</fieldset>`;
}

/** The fields a group's form has beyond its name, from a failed form or from the group as stored. */
function groupFields(c: ConsoleRequest, values: URLSearchParams | undefined, group: Group | undefined): Html {
  const listing = values?.get("listing") ?? group?.listing ?? "auto";
  const models = values ? values.getAll("models") : group?.models ?? [];
  return html`<label>Listing shape of /v1/models ${select("listing", LISTINGS, listing)}</label>
${modelChoices(c, models)}${limitInputs(values, group?.limits, c.deps.config.currency)}`;
}

async function listPage(c: ConsoleRequest, failed?: { values: URLSearchParams; error: GatewayError }) {
  const [groups, tokens] = await Promise.all([c.service.listGroups(), c.service.listTokens()]);
  const active = new Map<string, number>();
  for (const token of tokens) if (!token.disabled) active.set(token.group, (active.get(token.group) ?? 0) + 1);
  const rows = groups.map((g) =>
    html`
      <tr>
        <td><a href="${groupPath(g.name)}">${g.name}</a></td>
        <td>${isConfigGroup(c, g.name) ? badge("config file", "off") : badge("console or API", "ok")}</td>
        <td>${g.listing}</td>
        <td class="wrap">${g.models.join(", ") || "–"}</td>
        <td>${limitsText(g.limits, c.deps.config.currency)}</td>
        <td class="num">${count(active.get(g.name) ?? 0)}</td>
      </tr>
    `
  );
  const values = failed?.values;
  const form = html`
    <details class="panel" ${values ? "open" : ""}>
      <summary>New group</summary>
      <form method="post" action="/ui/groups" class="grid">
    <label>Name <span class="muted">(letters, digits, '_', '.', '-')</span><input name="name" maxlength="64" value="${values
      ?.get("name") ?? ""}"></label>${groupFields(c, values, undefined)}
    <div class="actions"><button type="submit" class="primary">Create group</button></div></form>
    </details>
  `;
  const body = html`${form}${
    table(
      ["Name", "Defined in", "Listing", "Models", "Limits", "Active tokens"],
      rows,
      "No groups yet. The config file's groups appear here once the gateway has started with it.",
      "groups",
    )
  }`;
  const notice = failed ? { text: failed.error.message, tone: "bad" as const } : doneNotice(c.url);
  return pageResponse({ title: "Groups", nav: "/ui/groups", body, notice }, failed?.error.status ?? 200);
}

async function detailPage(c: ConsoleRequest, failed?: { values: URLSearchParams; error: GatewayError }) {
  const group = await c.service.getGroup(c.params.id);
  const fromConfig = isConfigGroup(c, group.name);
  const facts = html`
    <dl class="facts">
      <dt>Listing</dt>
      <dd>${group.listing}</dd>
      <dt>Models</dt>
      <dd class="wrap">${group.models.join(", ") || "–"}</dd>
      <dt>Limits</dt>
      <dd>${limitsText(group.limits, c.deps.config.currency)}</dd>
    </dl>
  `;
  const body = fromConfig
    ? html`<section class="panel"><p class="notice off">${CONFIG_REASON}</p>${facts}</section>`
    : html`
      <section class="panel">
        <form method="post" action="${groupPath(group.name)}" class="grid">
      ${groupFields(c, failed?.values, group)}
      <div class="actions"><button type="submit" class="primary">Save</button></div></form>
      </section>
      <section class="panel">
        <h2>Delete</h2>
        <p class="muted">Refused while an active token is in the group.</p>
        <form method="post" action="${groupPath(
          group.name,
        )}/delete"><button type="submit" class="danger">Delete group</button></form>
      </section>
    `;
  const notice = failed ? { text: failed.error.message, tone: "bad" as const } : doneNotice(c.url);
  const links = html`<p><a href="/ui/tokens?group=${
    encodeURIComponent(group.name)
  }">Its tokens</a> · <a href="/ui/usage?by=group&amp;name=${encodeURIComponent(group.name)}">Its usage</a></p>`;
  const guardrails = await groupGuardrails(c, group);
  return pageResponse(
    { title: `Group ${group.name}`, nav: "/ui/groups", body: html`${body}${guardrails}${links}`, notice },
    failed?.error.status ?? 200,
  );
}

/** Runs a change; a refusal shows `again` with the form's values and the service's message. */
async function change(
  c: ConsoleRequest,
  run: (form: URLSearchParams) => Promise<string>,
  again: (c: ConsoleRequest, failed: { values: URLSearchParams; error: GatewayError }) => Promise<Response>,
): Promise<Response> {
  const form = await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  try {
    return redirect(await run(form));
  } catch (err) {
    const refused = refusal(err);
    if (refused) return again(c, { values: form, error: refused });
    throw err;
  }
}

/** The groups pages' routes. */
export const GROUP_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/groups", handle: (c) => listPage(c) },
  {
    method: "POST",
    path: "/groups",
    handle: (c) =>
      change(c, async (form) => {
        const group = await c.service.createGroup(groupInput(form, true));
        return `${groupPath(group.name)}?done=created`;
      }, listPage),
  },
  { method: "GET", path: "/groups/:id", handle: (c) => detailPage(c) },
  {
    method: "POST",
    path: "/groups/:id",
    handle: (c) =>
      change(c, async (form) => {
        await c.service.updateGroup(c.params.id, groupInput(form, false));
        return `${groupPath(c.params.id)}?done=saved`;
      }, detailPage),
  },
  {
    method: "POST",
    path: "/groups/:id/delete",
    handle: (c) =>
      change(c, async () => {
        await c.service.deleteGroup(c.params.id);
        return "/ui/groups?done=deleted";
      }, detailPage),
  },
];

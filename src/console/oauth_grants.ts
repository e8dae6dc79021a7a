/**
 * @module The console's page of the OAuth grants and clients of /mcp: each grant an MCP client holds (the client as it
 * named itself, the person or token it acts for, the group it acts in now, when it was made, refreshed and ends) with
 * its revoke button, and the clients registered dynamically. Every change goes through the admin service.
 */
import type { OAuthClient } from "../access/oauth_clients.ts";
import type { GrantView } from "../access/oauth_grants.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice } from "./context.ts";
import { badge, moment } from "./format.ts";
import { readForm } from "./forms.ts";
import { html } from "./html.ts";
import { pageResponse, redirect } from "./page.ts";
import { table } from "./widgets.ts";

function grantRow(grant: GrantView) {
  const group = grant.group === undefined ? badge("no group now", "warn") : html`<code>${grant.group}</code>`;
  return html`
    <tr>
      <td>${grant.client_name}<div class="muted small"><code>${grant.client_id}</code></div></td>
      <td>${grant.person ?? ""}${grant.token
        ? html`<div class="muted small">token <a href="/ui/tokens/${
          encodeURIComponent(grant.token)
        }"><code>${grant.token}</code></a></div>`
        : ""}</td>
      <td>${group}</td>
      <td>${moment(grant.created_at)}<div class="muted small"><code>${grant.id}</code></div></td>
      <td>${grant.refreshed_at ? moment(grant.refreshed_at) : html`<span class="muted">not yet</span>`}</td>
      <td>${moment(grant.expires_at)}</td>
      <td>
        <form method="post" action="/ui/oauth/${encodeURIComponent(grant.id)}/revoke" class="inline">
        <button type="submit" class="danger">Revoke</button></form>
      </td>
    </tr>
  `;
}

function clientRow(client: OAuthClient) {
  return html`
    <tr>
      <td>${client.client_name}<div class="muted small"><code>${client.client_id}</code></div></td>
      <td>${client.redirect_uris.map((uri) => html`<div><code>${uri}</code></div>`)}</td>
      <td>${moment(client.registered_at)}</td>
    </tr>
  `;
}

async function listPage(c: ConsoleRequest): Promise<Response> {
  const [grants, clients] = await Promise.all([c.service.listOAuthGrants(), c.service.listOAuthClients()]);
  const base = `${new URL(c.req.url).origin}/mcp`;
  const body = html`
    <p><a href="/ui/mcp">MCP servers</a> · MCP sign-ins</p>
    <p class="muted">MCP clients that cannot be given a token (Claude's and ChatGPT's connectors, VS Code, Cursor) are
      added by the URL <code>${base}</code> alone and sign the person in. Each holds a grant of that person: it acts in
      their first token group, for at most an hour per access token, and ends when it is revoked here, when they are
      removed, or when it is not refreshed for ${c.deps.config.auth.mcp_oauth.refresh_token_days} days.</p>
    <h2>Grants</h2>
    ${table(
      ["Client", "Person", "Group now", "Granted", "Refreshed", "Ends", ""],
      grants.reverse().map(grantRow),
      "No MCP client holds a grant.",
      "grants",
    )}
    <h2>Registered clients</h2>
    ${table(
      ["Client", "Redirect URIs", "Registered"],
      clients.reverse().map(clientRow),
      "No client registered.",
      "clients",
    )}
  `;
  // Under the MCP entry of the navigation, which links here.
  return pageResponse({ title: "MCP sign-ins", nav: "/ui/mcp", body, notice: doneNotice(c.url) });
}

async function revoke(c: ConsoleRequest): Promise<Response> {
  await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  await c.service.revokeOAuthGrant(c.params.id);
  return redirect("/ui/oauth?done=revoked-grant");
}

/** The page's routes. */
export const OAUTH_GRANT_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/oauth", handle: listPage },
  { method: "POST", path: "/oauth/:id/revoke", handle: revoke },
];

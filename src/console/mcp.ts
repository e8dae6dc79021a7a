/**
 * @module The MCP servers page: each configured server (how it is reached, where its credentials come from, its state
 * as this instance sees it), its tools under the names clients see, and which groups may use each.
 */
import type { McpServerConfig } from "../core/mcp_config.ts";
import type { Group } from "../core/principal.ts";
import type { Health } from "../mcp/catalog.ts";
import type { ServerView } from "../mcp/hub.ts";
import { allows } from "../mcp/names.ts";
import type { ConsoleRequest, ConsoleRoute } from "./context.ts";
import { badge, count, moment, span } from "./format.ts";
import { type Html, html } from "./html.ts";
import { pageResponse } from "./page.ts";
import { table } from "./widgets.ts";
import { safeAddress } from "./upstreams.ts";

/** The longest the page waits for servers not listed yet before it shows what it has. */
const LIST_WAIT_MS = 2000;

const TONES = { up: "ok", unknown: "off", down: "bad", idle: "off", starting: "warn" } as const;

/** A server's state: its listings' health and, for a stdio server, its process. */
function stateOf(view: ServerView): Html {
  const when = (at: number | undefined) =>
    at
      ? html`
        <span class="muted">since ${moment(new Date(at).toISOString())}</span>
      `
      : "";
  const health: Health = view.health;
  const process = view.process;
  const processNote = process
    ? html`<div class="muted">process ${process.state}${
      process.restarts ? `, restarted ${count(process.restarts)}×` : ""
    }${process.retry_at ? html`, next start ${moment(new Date(process.retry_at).toISOString())}` : ""}</div>`
    : "";
  const label = health.state === "unknown" ? "not asked yet" : health.state;
  const error = health.error ? html`<div class="muted">${health.error}</div>` : "";
  return html`${badge(label, TONES[health.state])}${when(health.since)}${error}${processNote}`;
}

/** How the gateway reaches a server: its address, or the program it starts (never the values it is given). */
function reachOf(server: McpServerConfig): Html {
  if (server.url) return html`<code>${safeAddress(server.url)}</code>`;
  return html`<code>${server.command!.join(" ")}</code>`;
}

/** The environment variables a server's credentials or environment come from (names only, never values). */
function variablesOf(server: McpServerConfig): Html {
  const pairs = Object.entries(server.url ? server.headers ?? {} : server.env ?? {});
  if (pairs.length === 0) return html`<span class="muted">none</span>`;
  return html`${pairs.map(([name, variable]) => html`<div><code>${name}</code> ← <code>${variable}</code></div>`)}`;
}

function serversTable(c: ConsoleRequest, views: ServerView[]): Html {
  const rows = c.deps.mcp.servers.map((server, i) => {
    const listing = c.deps.mcp.catalog.last(server.name);
    return html`
      <tr>
        <td><strong>${server.name}</strong></td>
        <td>${server.url ? "Streamable HTTP" : "stdio"}</td>
        <td class="wrap">${reachOf(server)}</td>
        <td>${variablesOf(server)}</td>
        <td>${stateOf(views[i])}</td>
        <td class="num">${listing ? count(listing.tools.length) : "–"}</td>
        <td>${span(server.timeout_ms)} / ${span(server.list_timeout_ms)}</td>
      </tr>
    `;
  });
  return table(
    ["Name", "Transport", "Reached at", "Headers or environment from", "State", "Tools", "Call / listing timeout"],
    rows,
    "No MCP servers configured (mcp_servers in the config).",
  );
}

function toolsTable(c: ConsoleRequest, groups: Group[]): Html {
  // What a server lists is its own text, which may quote the credential the gateway sends it.
  const redact = c.deps.mcp.redact;
  const rows = c.deps.mcp.servers.flatMap((server) => {
    const listing = c.deps.mcp.catalog.last(server.name);
    return (listing?.tools ?? []).map((tool) => {
      const name = tool.name as string;
      const may = groups.filter((group) => allows(group.mcp, server.name, "tools", name)).map((group) => group.name);
      return html`
        <tr>
          <td><code>${redact(listing!.names.tools.exposed.get(name) ?? name)}</code></td>
          <td>${server.name}</td>
          <td class="wrap">${typeof tool.description === "string" ? redact(tool.description).slice(0, 200) : ""}</td>
          <td class="wrap">${may.join(", ") || html`<span class="muted">no group</span>`}</td>
        </tr>
      `;
    });
  });
  return table(
    ["Tool (as clients see it)", "Server", "Description", "Groups that may call it"],
    rows,
    "No tools listed.",
  );
}

/** A grant as words: everything, or each kind's names (a tool list alone gives tools only). */
function grantText(grant: NonNullable<Group["mcp"]>[string]): string {
  const list = (allowed: "*" | string[] | undefined) => allowed === "*" ? "all" : allowed?.join(", ") || "none";
  if (grant === "*") return "everything";
  if (Array.isArray(grant)) return `tools: ${list(grant)}`;
  return `tools: ${list(grant.tools)} · prompts: ${list(grant.prompts)} · resources: ${list(grant.resources)}`;
}

function grantsTable(groups: Group[]): Html {
  const rows = groups.filter((group) => group.mcp && Object.keys(group.mcp).length > 0).map((group) =>
    html`
      <tr>
        <td><strong>${group.name}</strong></td>
        <td class="wrap">${Object.entries(group.mcp!).map(([server, grant]) =>
          html`<div><span class="model">${server}</span> ${grantText(grant)}</div>`
        )}</td>
      </tr>
    `
  );
  return table(["Group", "May use"], rows, "No group may use an MCP server (a group's mcp in the config).");
}

async function mcpPage(c: ConsoleRequest): Promise<Response> {
  const hub = c.deps.mcp;
  // Servers not listed yet are asked now; the page waits a little for them, never for a server that hangs.
  const listed = Promise.allSettled(hub.servers.map((server) => hub.catalog.listing(server.name)));
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([listed, new Promise((resolve) => timer = setTimeout(resolve, LIST_WAIT_MS))]);
  clearTimeout(timer);
  const groups = await c.service.listGroups();
  const body = html`<p class="muted">Served to tokens at <code>/mcp</code> as each group's grant allows. From the config
this instance started with; states are this instance's own view, as of ${moment(c.now.toISOString())}. The clients
people signed in with OAuth are on <a href="/ui/oauth">MCP sign-ins</a>.</p>
<h2>Servers</h2>${serversTable(c, hub.views())}<h2>Tools</h2>${toolsTable(c, groups)}<h2>Grants</h2>${
    grantsTable(groups)
  }`;
  return pageResponse({ title: "MCP servers", nav: "/ui/mcp", body });
}

/** The MCP page's route. */
export const MCP_ROUTES: readonly ConsoleRoute[] = [{ method: "GET", path: "/mcp", handle: mcpPage }];

/**
 * @module The upstreams and models page: what the config serves (each upstream's kind, address, key variable,
 * order and timeouts; each public model's deployments and the groups that enable it) and every deployment's
 * health as this instance sees it, the same view `GET /healthz` gives.
 */
import type { Group } from "../core/principal.ts";
import type { UpstreamConfig } from "../core/upstream_config.ts";
import { healthReport, type UpstreamReport } from "../observe/ops.ts";
import type { HealthState } from "../relay/health.ts";
import type { ConsoleRequest, ConsoleRoute } from "./context.ts";
import { badge, count, moment, span } from "./format.ts";
import { type Html, html } from "./html.ts";
import { pageResponse } from "./page.ts";
import { table } from "./widgets.ts";

const TONES = { ok: "ok", probing: "warn", paused: "warn", cooling_down: "bad" } as const;

/** A health state as a badge, with when it ends and the failures in a row. */
function healthBadge(state: HealthState): Html {
  const notes = [
    state.cooling_until ? html`until ${moment(state.cooling_until)}` : "",
    state.recent_failures > 0 ? `${count(state.recent_failures)} failed in a row` : "",
  ].filter((note) => note !== "");
  const detail = notes.length > 0
    ? html`
      <span class="muted">${notes.map((n, i) => html`${i ? " · " : ""}${n}`)}</span>
    `
    : "";
  return html`${badge(state.state.replace("_", " "), TONES[state.state])}${detail}`;
}

/** Whether the upstream's credential is set and, once used, what the upstream made of it. */
function credentialBadge(up: UpstreamReport): Html {
  if (up.credential === "not_set") return badge("not set", "bad");
  if (up.credential === "refused") return badge("refused", "bad");
  if (up.credential === "unavailable") return badge("no token", "warn");
  return badge("set", "ok");
}

/** A refused or unobtainable credential, beside the upstream's state; nothing otherwise. */
function credentialTrouble(up: UpstreamReport): Html | "" {
  if (up.credential === "refused") return badge("credential refused", "bad");
  return up.credential === "unavailable" ? badge("no token", "warn") : "";
}

/** Every deployment's health, one row per upstream: the board the overview shows. */
export function healthBoard(upstreams: Record<string, UpstreamReport>): Html {
  const rows = Object.entries(upstreams).map(([name, up]) =>
    html`
      <tr>
        <td><strong>${name}</strong></td>
        <td>${up.has_key ? healthBadge(up) : badge("no key", "bad")}${credentialTrouble(up)}</td>
        <td class="wrap">${Object.entries(up.models).map(([model, state]) =>
          html`<div class="deployment"><span class="model">${model}</span> ${healthBadge(state)}</div>`
        )}</td>
      </tr>
    `
  );
  return table(
    ["Upstream", "Upstream state", "Deployments (model on this upstream)"],
    rows,
    "No upstreams configured.",
  );
}

/** An upstream's address without anything that could hold a secret (user info, query, fragment). */
export function safeAddress(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

/** The environment variables that hold an upstream's credentials (names only, never values). */
function credentialsOf(up: UpstreamConfig): string[] {
  switch (up.protocol) {
    case "anthropic-bedrock":
      return up.api_key_env ? [up.api_key_env] : [up.aws_access_key_id_env, up.aws_secret_access_key_env];
    case "anthropic-vertex":
    case "gemini-vertex":
      return [up.credentials_file_env];
    case "azure-openai":
      return up.entra ? [up.entra.client_secret_env] : [up.api_key_env!];
    case "demo":
      return [];
    default:
      return [up.api_key_env];
  }
}

function upstreamsTable(c: ConsoleRequest, report: Record<string, UpstreamReport>): Html {
  const rows = c.deps.config.upstreams.map((up) => {
    const models = up.models.map((entry) => {
      const model = typeof entry === "string" ? { id: entry } : entry;
      const upstreamId = "upstream_id" in model && model.upstream_id && model.upstream_id !== model.id
        ? html`
          <span class="muted">as ${model.upstream_id}</span>
        `
        : "";
      return html`<div class="deployment"><span class="model">${model.id}</span>${upstreamId}</div>`;
    });
    const health = report[up.name];
    return html`
      <tr>
        <td><strong>${up.name}</strong></td>
        <td>${up.protocol}</td>
        <td>${up.protocol === "demo" ? "built in, no network" : html`<code>${safeAddress(up.base_url)}</code>`}</td>
        <td>${credentialsOf(up).map((name) =>
          html`
            <code>${name}</code>
          `
        )}${up.protocol === "demo"
          ? badge("none needed", "ok")
          : health
          ? credentialBadge(health)
          : badge("not set", "bad")}</td>
        <td class="num">${up.priority}</td>
        <td class="num">${up.weight}</td>
        <td>${span(up.timeout_ms)} / ${span(up.idle_timeout_ms)}</td>
        <td>${health ? healthBadge(health) : "–"}</td>
        <td class="wrap">${models}</td>
      </tr>
    `;
  });
  return table(
    ["Name", "Speaks", "Address", "Credentials in", "Priority", "Weight", "Timeout / idle", "State", "Models"],
    rows,
    "No upstreams configured.",
  );
}

function modelsTable(c: ConsoleRequest, report: Record<string, UpstreamReport>, groups: Group[]): Html {
  const rows = [...c.deps.table.models.values()].map((info) => {
    const routes = c.deps.table.routes.get(info.id) ?? [];
    const enabled = groups.filter((g) => g.models.includes(info.id)).map((g) => g.name);
    return html`
      <tr>
        <td><strong>${info.id}</strong>${info.display_name !== info.id
          ? html`<div class="muted">${info.display_name}</div>`
          : ""}</td>
        <td>${routes.map((route) => {
          const state = report[route.upstream.name]?.models[info.id];
          return html`<div class="deployment"><span class="model">${route.upstream.name}</span> ${
            route.upstreamModel !== info.id
              ? html`
                <span class="muted">as ${route.upstreamModel}</span>
              `
              : ""
          }${state ? healthBadge(state) : ""}</div>`;
        })}</td>
        <td class="wrap">${enabled.join(", ") || html`<span class="muted">no group</span>`}</td>
      </tr>
    `;
  });
  return table(["Public model", "Deployments", "Groups"], rows, "No models configured.");
}

async function upstreamsPage(c: ConsoleRequest): Promise<Response> {
  const report = healthReport(c.deps)().upstreams;
  const groups = await c.service.listGroups();
  const body = html`<p class="muted">From the config this instance started with; health is this instance's own view
(the same as <code>GET /healthz</code>), as of ${moment(c.now.toISOString())}.</p>
<h2>Upstreams</h2>${upstreamsTable(c, report)}<h2>Models</h2>${modelsTable(c, report, groups)}`;
  return pageResponse({ title: "Upstreams and models", nav: "/ui/upstreams", body });
}

/** The upstreams page's route. */
export const UPSTREAM_ROUTES: readonly ConsoleRoute[] = [{ method: "GET", path: "/upstreams", handle: upstreamsPage }];

/**
 * @module The batches page: every batch made through the gateway, newest first, whoever made it (its API, state and
 * request counts as its protocol names them, owner, models, deployment and age), with a cancel for one still running.
 */
import { deskOf } from "../admin/routes.ts";
import { type BatchSummary, cancelBatch, listBatches } from "../batches/operate.ts";
import { type ConsoleRequest, type ConsoleRoute, doneNotice } from "./context.ts";
import { readForm } from "./forms.ts";
import { type Html, html } from "./html.ts";
import { pageResponse, redirect } from "./page.ts";
import { badge } from "./format.ts";
import { table } from "./widgets.ts";

const RUNNING = new Set(["in_progress", "canceling", "validating", "finalizing", "cancelling"]);

function age(seconds: number): string {
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86_400)} days`;
}

function state(batch: BatchSummary): Html {
  const tone = RUNNING.has(batch.state) ? "warn" : batch.state === "failed" || batch.state === "expired" ? "off" : "ok";
  return badge(batch.state, tone);
}

/** The request counts that are not zero, as the protocol names them. */
function counts(batch: BatchSummary): string {
  const shown = Object.entries(batch.counts).filter(([, value]) => value > 0);
  return shown.map(([name, value]) => `${name} ${value}`).join(" · ") || "–";
}

function cancelButton(batch: BatchSummary, c: ConsoleRequest): Html | string {
  if (batch.state !== "in_progress" && batch.state !== "validating" || c.actor.role === "viewer") return "";
  return html`<form method="post" action="/ui/batches/${encodeURIComponent(batch.id)}/cancel" class="inline">
<button type="submit" class="danger">Cancel</button></form>`;
}

function rows(batches: readonly BatchSummary[], c: ConsoleRequest): Html[] {
  return batches.map((b) =>
    html`
      <tr>
        <td><code>${b.id}</code><div class="muted small">${b.protocol === "anthropic"
          ? "Message Batches"
          : "Batch API"}</div></td>
        <td>${state(b)}</td>
        <td>${counts(b)}</td>
        <td>${b.owner ?? "–"}<div class="muted small">${b.token}${b.group ? ` · ${b.group}` : ""}</div></td>
        <td>${b.models.join(", ") || "–"}</td>
        <td>${b.runs_on}</td>
        <td title="${b.created_at}">${age(b.age_seconds)}</td>
        <td>${cancelButton(b, c)}</td>
      </tr>
    `
  );
}

async function batchesPage(c: ConsoleRequest): Promise<Response> {
  const batches = await listBatches(deskOf(c.deps), 200);
  const body = html`
    <p class="muted">Every batch made through the gateway, newest first; a running one is asked of its deployment.</p>
    ${table(
      ["Batch", "State", "Requests", "Owner", "Models", "Runs on", "Age", ""],
      rows(batches, c),
      "No batches yet.",
    )}
  `;
  return pageResponse({ title: "Batches", nav: "/ui/batches", body, notice: doneNotice(c.url) });
}

async function cancel(c: ConsoleRequest): Promise<Response> {
  await readForm(c.req, c.deps.config.body_idle_timeout_ms);
  await c.service.cancelBatch(c.params.id, () => cancelBatch(deskOf(c.deps), c.params.id));
  return redirect("/ui/batches?done=canceled-batch");
}

/** The batches page's routes. */
export const BATCH_ROUTES: readonly ConsoleRoute[] = [
  { method: "GET", path: "/batches", handle: batchesPage },
  { method: "POST", path: "/batches/:id/cancel", handle: cancel },
];

/**
 * @module Pieces several console pages share: form fields for limits, expiry and choices, a table with an empty
 * state, summary cards, and the usage table, with its cost column when the gateway prices requests.
 */
import type { Config, Limits } from "../core/config.ts";
import type { UsageRow } from "../usage/query.ts";
import { count, LIMIT_FIELDS, limitUnit, money, percent } from "./format.ts";
import { type Html, html, type HtmlValue } from "./html.ts";

/** The limit fields, filled from `values` (a failed form) or from `current` (what is stored); money in `currency`. */
export function limitInputs(values: URLSearchParams | undefined, current: Limits | undefined, currency: string): Html {
  return html`<fieldset class="limits"><legend>Limits <span class="muted">(empty: none)</span></legend>${
    LIMIT_FIELDS.map((name) => {
      const value = values ? values.get(name) ?? "" : current?.[name] ?? "";
      const mode = name.startsWith("cost_") ? "decimal" : "numeric";
      return html`<label>${
        limitUnit(name, currency)
      }<input name="${name}" inputmode="${mode}" value="${value}"></label>`;
    })
  }</fieldset>`;
}

/**
 * An expiry picker: a local date and time, which the page's script also writes as an ISO time into `expires_at`
 * (the server cannot know the browser's time zone), and, when editing, a box to remove the expiry.
 */
export function expiryInput(current: string | null | undefined, editing: boolean): Html {
  return html`<label>Expires <span class="muted">(your time zone; empty: ${editing ? "unchanged" : "never"})</span>
<input type="datetime-local" name="expires_local" data-iso="${current ?? ""}" data-into="expires_at">
<input type="hidden" name="expires_at"></label>${
    editing ? html`<label class="check"><input type="checkbox" name="no_expiry" value="1"> No expiry</label>` : ""
  }`;
}

/**
 * The one panel that shows a new secret, with its copy button, the facts about what it opens (label, value pairs),
 * how to send it and the way back. The secret is not kept anywhere and cannot be shown again.
 */
export function secretPanel(
  secret: string,
  view: { facts: [string, HtmlValue][]; send: Html; back: Html },
): Html {
  return html`
    <section class="panel secret">
      <p><strong>Copy the secret now.</strong> This is the only time it is shown; the gateway keeps only its hash.</p>
      <div
        class="copy"><code id="secret">${secret}</code><button type="button" class="primary" data-copy="secret">Copy</button>
    <span class="muted" data-copied hidden>Copied.</span></div>
      <dl class="facts">${view.facts.map(([label, value]) =>
        html`
          <dt>${label}</dt>
          <dd>${value}</dd>
        `
      )}</dl>
      <p class="muted">${view.send}</p>
      <p>${view.back}</p>
    </section>
  `;
}

/** A select of `options` with `selected` chosen; `any` adds a first, empty choice with that label. */
export function select(name: string, options: readonly string[], selected: string | undefined, any?: string): Html {
  return html`<select name="${name}">${any === undefined ? "" : html`<option value="">${any}</option>`}${
    options.map((option) => html`<option ${option === selected ? "selected" : ""}>${option}</option>`)
  }</select>`;
}

/** A table, or the sentence to show when it has no rows. */
export function table(head: readonly HtmlValue[], rows: readonly Html[], empty: string, id?: string): Html {
  if (rows.length === 0) {
    return html`
      <p class="empty" ${id
        ? html`
          id="${id}"
        `
        : ""}>${empty}</p>
    `;
  }
  return html`
    <div class="scroll" ${id
      ? html`
        id="${id}"
      `
      : ""}>
      <table>
        <thead>
          <tr>${head.map((cell) => html`<th>${cell}</th>`)}</tr>
        </thead>
        <tbody>${rows}</tbody>
      </table>
    </div>
  `;
}

/** A row of figures with their units. */
export function cards(items: { label: string; value: string; detail?: string }[]): Html {
  return html`<div class="cards">${
    items.map((item) =>
      html`<div class="card"><div class="label">${item.label}</div><div class="value">${item.value}</div>${
        item.detail ? html`<div class="muted">${item.detail}</div>` : ""
      }</div>`
    )
  }</div>`;
}

/**
 * True when costs are worth a column: the config prices some deployment, or a row shows a cost recorded under an
 * earlier config. Without prices every cost is "0", and the columns would only say so.
 */
export function pricing(config: Config, rows: readonly { cost: string }[] = []): boolean {
  const priced = config.upstreams.some((up) => up.models.some((model) => typeof model !== "string" && model.price));
  return priced || rows.some((row) => row.cost !== "0");
}

/** A cost rounded for reading, the exact amount in its tooltip, and the requests it leaves out (no price). */
export function costCell(cost: string, unpriced: number, currency: string): Html {
  const left = unpriced > 0
    ? html`<div class="muted small" title="requests on deployments without a price">+${count(unpriced)} unpriced</div>`
    : "";
  return html`<td class="num" title="${cost} ${currency}">${money(cost, currency)}${left}</td>`;
}

/** Rows of usage as a table; `label` names each row's key; `currency` adds the cost column when costs are shown. */
export function usageTable(
  rows: readonly UsageRow[],
  label: (key: string) => HtmlValue,
  options: { empty: string; currency?: string },
): Html {
  const { currency } = options;
  const head = [
    "",
    "Requests",
    "Errors",
    "Input tokens",
    "Output tokens",
    "Cache read",
    "Cache write",
    "Total tokens",
    ...currency ? ["Cost"] : [],
  ];
  return table(
    head,
    rows.map((row) =>
      html`<tr><td>${label(row.key)}</td><td class="num">${count(row.requests)}</td><td class="num">${
        count(row.errors)
      }${
        row.errors > 0
          ? html`
            <span class="muted">(${percent(row.errors, row.requests)})</span>
          `
          : ""
      }</td>${
        [row.input_tokens, row.output_tokens, row.cache_read_input_tokens, row.cache_creation_input_tokens].map((n) =>
          html`<td class="num">${count(n)}</td>`
        )
      }<td class="num strong">${count(row.total_tokens)}</td>${
        currency ? costCell(row.cost, row.unpriced, currency) : ""
      }</tr>`
    ),
    options.empty,
  );
}

/**
 * @module HTML that is escaped by default: a tagged template that escapes every value it is given unless the value
 * was itself made by the template, so a token name, a model id or an error message from KV can only ever be text.
 */

// A symbol, not a property name: a value read from KV or a form cannot carry it, so cannot pass for trusted HTML.
const TRUSTED = Symbol("html");

/** A piece of HTML made by {@linkcode html}: safe to put in a page as it is. */
export interface Html {
  readonly [TRUSTED]: string;
}

/** What a template accepts: HTML pieces as they are; text, numbers and anything else escaped; lists joined. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** `text` with every character that means something in HTML (in content and in quoted attributes) escaped. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char]);
}

function isHtml(value: unknown): value is Html {
  return typeof value === "object" && value !== null && TRUSTED in value;
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return "";
  if (isHtml(value)) return value[TRUSTED];
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/** The template tag: `html\`<td>${name}</td>\`` escapes `name`; nested `html` pieces and lists of them pass. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return { [TRUSTED]: out };
}

/** The text of a piece of HTML, to send. */
export function htmlText(value: Html): string {
  return value[TRUSTED];
}

/**
 * @module The console's forms as the admin service's input: a urlencoded body read within a size limit, and the
 * fields of token, group and operator key forms turned into the same JSON the admin API takes, so the service checks them alike.
 */
import { LIMIT_FIELDS } from "../access/limits.ts";
import type { Limits } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import { readBodyBytes } from "../core/request_body.ts";

/** Forms are a few fields; anything longer is not one of the console's. */
const MAX_FORM_BYTES = 64 * 1024;

const decoder = new TextDecoder();

/**
 * The request's urlencoded form, read as every request body is: up to a limit, and a 408 (with the connection
 * closed) when it stops arriving for `idleMs`, so a half-sent sign-in form cannot hold a connection open for good.
 */
export async function readForm(req: Request, idleMs: number): Promise<URLSearchParams> {
  const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") {
    await req.body?.cancel();
    throw new GatewayError("invalid_request", "The console takes forms as application/x-www-form-urlencoded", {
      status: 415,
    });
  }
  return new URLSearchParams(decoder.decode(await readBodyBytes(req, { maxBytes: MAX_FORM_BYTES, idleMs })));
}

/** A text field, trimmed; undefined when empty. */
export function field(form: URLSearchParams, name: string): string | undefined {
  const value = form.get(name)?.trim();
  return value ? value : undefined;
}

/** A number as typed, or the text as it is so the service's message names the field and says what it expected. */
function numeric(text: string): number | string {
  const plain = text.replace(/[\s_]/g, "");
  return /^-?\d+(\.\d+)?$/.test(plain) ? Number(plain) : text;
}

/** The limit fields that were filled in, or undefined when none was. */
function limitsOf(form: URLSearchParams): Partial<Record<keyof Limits, number | string>> | undefined {
  const out: Partial<Record<keyof Limits, number | string>> = {};
  for (const name of Object.keys(LIMIT_FIELDS) as (keyof Limits)[]) {
    const value = field(form, name);
    if (value !== undefined) out[name] = numeric(value);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The expiry a form asks for: `expires_at` as the page's script fills it from the local date and time (an ISO time),
 * else the local field read as UTC when the script did not run; null when the form asks for none.
 */
function expiryOf(form: URLSearchParams): string | null | undefined {
  if (form.get("no_expiry")) return null;
  const iso = field(form, "expires_at");
  if (iso) return iso;
  const local = field(form, "expires_local");
  return local ? `${local.length === 16 ? `${local}:00` : local}Z` : undefined;
}

/** The admin API's body for a new operator key; no expiry given means the service's default. */
export function operatorKeyInput(form: URLSearchParams): Record<string, unknown> {
  return { name: field(form, "name"), role: field(form, "role"), expires_at: expiryOf(form) ?? undefined };
}

/** The admin API's body for a new token. */
export function tokenCreateInput(form: URLSearchParams): Record<string, unknown> {
  return {
    group: field(form, "group"),
    name: field(form, "name"),
    owner: field(form, "owner"),
    expires_at: expiryOf(form) ?? undefined,
    limits: limitsOf(form),
  };
}

/** The admin API's body for a token's edit: every field is on the form, so empty limits clear them. */
export function tokenUpdateInput(form: URLSearchParams): Record<string, unknown> {
  return {
    name: field(form, "name"),
    group: field(form, "group"),
    expires_at: expiryOf(form),
    limits: limitsOf(form) ?? null,
  };
}

/** The admin API's body for a new group (`withName`) or a group's edit. */
export function groupInput(form: URLSearchParams, withName: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {
    listing: field(form, "listing"),
    models: form.getAll("models").filter(Boolean),
    limits: withName ? limitsOf(form) : limitsOf(form) ?? null,
  };
  return withName ? { name: field(form, "name"), ...body } : body;
}

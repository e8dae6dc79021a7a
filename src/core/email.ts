/**
 * @module What the gateway takes for a person's email, wherever it reads one (the identity provider's id_token, a role
 * rule, a person's record, a token's owner): one address, with exactly one `@` between a local part and a domain and
 * no white space or control character in it; white space around it is trimmed and letters are lower-cased, so one
 * person is one address everywhere, and a rule's domain is compared with the text after that one `@`, exactly.
 */
import { z } from "zod";

/** The longest local part and domain taken (far past what mail systems use; a person's record is keyed by it). */
const MAX_PART = 200;

/** The email `value` stands for, trimmed and lower-cased, or undefined when it is not one address. */
export function emailAddress(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const email = value.trim().toLowerCase();
  const at = email.indexOf("@");
  if (at < 1 || at > MAX_PART || at !== email.lastIndexOf("@")) return undefined;
  const domain = email.length - at - 1;
  if (domain < 1 || domain > MAX_PART || /[\s\p{Cc}]/u.test(email)) return undefined;
  return email;
}

/** The domain of an email (the text after its one `@`, lower-cased); "" when it is not one address. */
export function emailDomain(value: string): string {
  const email = emailAddress(value);
  return email === undefined ? "" : email.slice(email.indexOf("@") + 1);
}

/** An email in a config file or a request, read as {@linkcode emailAddress} reads it. */
export const EmailText = z.string().transform((text, ctx) => {
  const email = emailAddress(text);
  if (email === undefined) {
    ctx.addIssue({ code: "custom", message: "must be one email address (one @, no spaces)" });
    return z.NEVER;
  }
  return email;
});

/**
 * @module Secrets taken out of text and of parsed values: each secret as it is, as it reads inside a JSON string (once
 * or twice encoded), and written with escapes (`\u0073k-...`, `\/`, at any depth of JSON in JSON), so a value that
 * decodes to a secret is caught in the encoded text, before anything decodes it.
 */

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/**
 * The literal forms in which `secrets` may appear in text: each as it is and, where they differ, as it reads inside a
 * JSON string and inside a JSON string within one (a service-account key's line breaks as `\n` and `\\n`). Empty
 * values are left out.
 */
export function secretForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === "") continue;
    const once = JSON.stringify(secret).slice(1, -1);
    forms.add(secret).add(once).add(JSON.stringify(once).slice(1, -1));
  }
  return [...forms];
}

/** Takes secrets out of text and parsed values; made once for a set of secrets, used for many texts. */
export interface TextRedactor {
  /** `text` with every form of every secret replaced by {@linkcode REDACTED}. */
  text(text: string): string;
  /** `value` with every string in it (property names too) redacted; the same value when nothing changed. */
  value<T>(value: T): T;
}

/** JSON's two-character escapes, by the character they stand for. */
export const SHORT_ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  "\b": "b",
  "\f": "f",
  "\n": "n",
  "\r": "r",
  "\t": "t",
};

/** How a search reads its input: as text, or as bytes seen one character per byte (windows-1252, never decoded). */
export type EscapedInput = "text" | "bytes";

const BYTE_VIEW = new TextDecoder("windows-1252");
const UTF8 = new TextEncoder();

/** `\uXXXX` for one UTF-16 unit, its hex digits in either case, behind `backslashes`. */
function unitEscape(code: number, backslashes: string): string {
  const hex = code.toString(16).padStart(4, "0");
  return `${backslashes}u${[...hex].map((d) => /[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d).join("")}`;
}

/**
 * A pattern for one character of a secret: itself (as text, or as its UTF-8 bytes), or any JSON escape of it behind
 * one or more backslashes (JSON in JSON). A secret's first character takes its backslashes only from the start of a
 * run of them: tried from inside a long run, each position would scan the rest of it again, and the search would take
 * time quadratic in the run's length.
 */
function characterPattern(character: string, first: boolean, input: EscapedInput): string {
  const backslashes = first ? "(?<!\\\\)\\\\+" : "\\\\+";
  const literal = input === "text" ? character : BYTE_VIEW.decode(UTF8.encode(character));
  // A character past the first plane is two units, each escaped (the second behind a run of its own).
  const units = [...Array(character.length).keys()].map((i) =>
    unitEscape(character.charCodeAt(i), i ? "\\\\+" : backslashes)
  );
  const forms = [literal.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&"), units.join("")];
  const short = SHORT_ESCAPES[character];
  if (short !== undefined) forms.push(`${backslashes}${short.replace(/[\\/]/g, "\\$&")}`);
  return `(?:${forms.join("|")})`;
}

/**
 * One search for every secret written with any mix of JSON escapes, in text or in bytes (see {@linkcode EscapedInput});
 * undefined when there is no secret. Only worth running on an input that {@linkcode mayHideSecret}.
 */
export function escapedSecretPattern(secrets: readonly string[], input: EscapedInput): RegExp | undefined {
  const raw = secrets.filter((secret) => secret !== "");
  if (raw.length === 0) return undefined;
  const one = (secret: string) => [...secret].map((c, i) => characterPattern(c, i === 0, input)).join("");
  return new RegExp(raw.map(one).join("|"), "g");
}

/** True when `text` holds an escape that could spell part of a secret: `\u` or `\/`. */
function mayHideSecret(text: string): boolean {
  return text.includes("\\u") || text.includes("\\/");
}

/** A redactor for `secrets` (empty values are ignored). */
export function textRedactor(secrets: readonly string[]): TextRedactor {
  const forms = secretForms(secrets);
  const any = forms.length > 0;
  // Built only for a text that holds an escape, which most never do.
  let escaped: RegExp | undefined;
  function text(input: string): string {
    let out = input;
    for (const form of forms) if (out.includes(form)) out = out.replaceAll(form, REDACTED);
    if (any && mayHideSecret(out)) {
      escaped ??= escapedSecretPattern(secrets, "text")!;
      out = out.replace(escaped, REDACTED);
    }
    return out;
  }
  function value(input: unknown): unknown {
    if (typeof input === "string") return text(input);
    if (Array.isArray(input)) {
      let copy: unknown[] | undefined;
      input.forEach((item, i) => {
        const clean = value(item);
        if (clean !== item) (copy ??= [...input])[i] = clean;
      });
      return copy ?? input;
    }
    if (input === null || typeof input !== "object" || Object.getPrototypeOf(input) !== Object.prototype) return input;
    let changed = false;
    const entries = Object.entries(input).map(([key, item]) => {
      const [cleanKey, clean] = [text(key), value(item)];
      if (cleanKey !== key || clean !== item) changed = true;
      return [cleanKey, clean] as const;
    });
    return changed ? Object.fromEntries(entries) : input;
  }
  return { text, value: value as <T>(input: T) => T };
}

/** `text` with every form of every secret replaced, for upstream text on its way to a client or a log. */
export function redactText(text: string, secrets: readonly string[]): string {
  return secrets.length === 0 ? text : textRedactor(secrets).text(text);
}

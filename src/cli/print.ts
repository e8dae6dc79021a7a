/**
 * @module How the CLI prints what others wrote (token names, owners, user agents, audit fields, model ids, a
 * gateway's answers): control characters are shown escaped wherever they would reach the terminal, in tables, in
 * messages and in JSON, so no value can move the cursor, clear the screen, set the clipboard, reorder a line or forge
 * a row.
 */

/**
 * The characters a terminal acts on rather than shows: C0 controls (ESC among them), DEL and C1 controls (0x9b is a
 * CSI of its own), and the Unicode marks that reorder or break a line (bidirectional overrides and isolates, the line
 * and paragraph separators).
 */
// deno-lint-ignore no-control-regex -- matching control characters is the point
const CONTROL = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** The same, less what JSON.stringify already escapes (C0 controls). */
const CONTROL_LEFT_IN_JSON = /[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function escaped(char: string): string {
  const code = char.charCodeAt(0);
  return NAMED[char] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16)}`);
}

/** `text` with every control character shown as an escape (`\x1b`, `\n`, `\u202e`), the rest as it is. */
export function printable(text: string): string {
  return text.replace(CONTROL, escaped);
}

/**
 * `value` as indented JSON that a terminal shows as it is: JSON.stringify escapes C0 controls; the others are written
 * as `\u` escapes too, which JSON reads back as the same characters.
 */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    CONTROL_LEFT_IN_JSON,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Renders rows as aligned columns, every cell printable; the first row is the header. */
export function table(rows: string[][]): string {
  const shown = rows.map((row) => row.map(printable));
  const widths = shown[0].map((_, col) => Math.max(...shown.map((row) => row[col].length)));
  return shown.map((row) => row.map((cell, col) => cell.padEnd(widths[col])).join("  ").trimEnd()).join("\n");
}

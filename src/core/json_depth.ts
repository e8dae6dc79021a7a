/**
 * @module How deep a JSON text nests its arrays and objects, read from the text before it is parsed. Parsing a deep
 * text is fine, but much of what the gateway does with a body walks it (translation, schemas, compaction, storage),
 * and a walk thousands of levels deep runs out of stack. One limit at the body's read keeps every later step within
 * depths that real requests never reach; see docs/operating.md,
 * "Request bodies and slow clients".
 */
import { GatewayError } from "./errors.ts";

/** The deepest nesting of arrays and objects a request body or socket message may have. */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * True when `text` nests deeper than `max`. Brackets inside strings do not count; a string's body is skipped with the
 * runtime's own search for its closing quote, so the cost is in the structure, not in the text a body carries (about
 * 0.05 ms for a megabyte of prose). Malformed JSON is left for the parser to name.
 */
export function deeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      let end = text.indexOf('"', i + 1);
      // A quote after an odd run of backslashes is part of the string.
      for (;;) {
        if (end === -1) return false;
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
        if (slashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      i = end;
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) depth--;
  }
  return false;
}

/** The 400 for a body or message that nests too deep, naming the limit. */
export function tooDeep(what: string, max = MAX_JSON_DEPTH): GatewayError {
  return new GatewayError(
    "invalid_request",
    `${what} nests arrays and objects more than ${max} levels deep; the gateway accepts at most ${max}`,
  );
}

/**
 * Throws a 400 when the JSON text of a request body (`what`: "Request body") or of a socket message ("Message") nests
 * deeper than `max`.
 */
export function checkJsonDepth(text: string, what: string, max = MAX_JSON_DEPTH): void {
  if (deeperThan(text, max)) throw tooDeep(what, max);
}

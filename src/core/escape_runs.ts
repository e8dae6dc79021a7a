/**
 * @module Where in bytes a secret written with JSON escapes could be, found without decoding them and skipping most
 * bytes: such a spelling is made only of the secret's own bytes, backslashes, `u`, hex digits and the letters of the
 * short escapes of the secret's characters (`\/` for a slash), holds a backslash, and is at least as many bytes long as the secret has characters. A run of
 * those bytes shorter than that, or without a backslash, holds none; most of a stream's text is broken into short runs
 * by spaces, quotes and punctuation, so a search looks at one byte in every secret's length.
 */

import { SHORT_ESCAPES } from "./redact.ts";

const BACKSLASH = 0x5c;

/** The bytes a spelling of the secrets is made of, and the fewest bytes one takes. */
export interface EscapeAlphabet {
  /** 1 for a byte that may be part of a spelling. */
  bytes: Uint8Array;
  minLength: number;
}

/** The alphabet of every spelling of `secrets` (at least one, none empty). */
export function escapeAlphabet(secrets: readonly string[]): EscapeAlphabet {
  const bytes = new Uint8Array(256);
  const encoder = new TextEncoder();
  for (const secret of secrets) {
    for (const byte of encoder.encode(secret)) bytes[byte] = 1;
    // The letter of a character's short escape (`\n` for a line break in a key file).
    for (const char of secret) if (SHORT_ESCAPES[char]) bytes[SHORT_ESCAPES[char].charCodeAt(0)] = 1;
  }
  for (const char of "\\u0123456789abcdefABCDEF") bytes[char.charCodeAt(0)] = 1;
  return { bytes, minLength: Math.min(...secrets.map((secret) => [...secret].length)) };
}

/** True when `bytes[start, end)` holds a backslash. */
function backslashIn(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i] === BACKSLASH) return true;
  return false;
}

/**
 * True when `bytes[0, end)` may hold a spelling: a run of the alphabet at least `minLength` long with a backslash in
 * it. Linear: a byte outside the alphabet moves the search on by `minLength`, and each run is read once.
 */
export function mayHoldEscaped(bytes: Uint8Array, alphabet: EscapeAlphabet, end = bytes.length): boolean {
  const { bytes: allowed, minLength } = alphabet;
  let floor = 0;
  for (let i = minLength - 1; i < end;) {
    if (!allowed[bytes[i]]) {
      floor = i + 1;
      i += minLength;
      continue;
    }
    let start = i;
    while (start > floor && allowed[bytes[start - 1]]) start--;
    let stop = i + 1;
    while (stop < end && allowed[bytes[stop]]) stop++;
    if (stop - start >= minLength && backslashIn(bytes, start, stop)) return true;
    floor = stop;
    i = stop + minLength;
  }
  return false;
}

/**
 * Where the run of the alphabet that ends `bytes` starts, when it holds a backslash: a spelling may be under way there,
 * to be finished by the next bytes. -1 when the bytes end outside the alphabet or the run has no backslash.
 */
export function unfinishedRun(bytes: Uint8Array, alphabet: EscapeAlphabet): number {
  const allowed = alphabet.bytes;
  let start = bytes.length;
  let escaped = false;
  while (start > 0 && allowed[bytes[start - 1]]) {
    start--;
    if (bytes[start] === BACKSLASH) escaped = true;
  }
  return escaped ? start : -1;
}

/** True when every byte of `bytes` is of the alphabet: a run under way goes on through all of them. */
export function allOf(bytes: Uint8Array, alphabet: EscapeAlphabet): boolean {
  const allowed = alphabet.bytes;
  for (let i = 0; i < bytes.length; i++) if (!allowed[bytes[i]]) return false;
  return true;
}

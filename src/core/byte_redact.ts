/**
 * @module Secrets taken out of bytes on their way to a client, chunk by chunk, in every form a whole text is searched
 * for (core/redact.ts), so a stream and a whole answer agree: each literal form is searched for in the bytes as they
 * are (never decoded), and the few bytes at a chunk's end that could begin one are held back until the next chunk
 * shows whether they do; a secret written with JSON escapes (`\u0073k-...`, `\/`) is searched for where it can only be
 * (escape_runs.ts), and the run of bytes at a chunk's end that may be one under way is held until it ends (see
 * docs/protocols.md, "Server-sent events").
 */
import { type ByteMarker, bytePattern, indexOfMarker } from "./byte_search.ts";
import { allOf, escapeAlphabet, mayHoldEscaped, unfinishedRun } from "./escape_runs.ts";
import { joined } from "./bytes.ts";
import { escapedSecretPattern, REDACTED, secretForms } from "./redact.ts";

const REDACTED_BYTES = new TextEncoder().encode(REDACTED);
const EMPTY = new Uint8Array(0);
/**
 * The longest run held for a secret written with escapes. Past it the run is searched as far as it has come and sent
 * but for its last {@linkcode ESCAPED_TAIL} bytes, so an upstream that never ends one cannot make the gateway hold all
 * it sends.
 */
export const MAX_HELD_RUN = 1024 * 1024;
/** What of an over-long run stays held: far more than any secret takes, however it is escaped. */
const ESCAPED_TAIL = 64 * 1024;
/** Bytes seen one character per byte, so a match's place is its place in the bytes. */
const BYTE_VIEW = new TextDecoder("windows-1252");

/** Secrets taken out of one stream's bytes. */
export interface ByteRedactor {
  /** What of the bytes held so far and `chunk` may go out now, each secret replaced; may be empty. */
  push(chunk: Uint8Array): Uint8Array;
  /** True while bytes that could begin a secret, or a run that may be one written with escapes, are held back. */
  holding(): boolean;
  /** Forgets what is held: at a stream's end it is an unfinished fragment, and may be most of a secret. */
  drop(): void;
}

/** A redactor for `secrets`, or undefined when there is nothing to take out (the stream then costs nothing more). */
export function byteRedactor(secrets: readonly string[]): ByteRedactor | undefined {
  const encoder = new TextEncoder();
  const patterns = secretForms(secrets).map((secret) => bytePattern(encoder.encode(secret)));
  if (patterns.length === 0) return undefined;
  const beginnings = patterns.map((pattern) => beginningsByLastByte(pattern.bytes));
  const alphabet = escapeAlphabet(secrets.filter((secret) => secret !== ""));
  let escaped: RegExp | undefined;
  // Bytes that could begin a literal form; or a run that may be a secret written with escapes, in the pieces it came in.
  let held = EMPTY;
  let line: Uint8Array[] = [];
  let lineBytes = 0;

  /** `bytes` with each secret written with escapes replaced; the same bytes when none is there. */
  function withoutEscaped(bytes: Uint8Array): Uint8Array {
    escaped ??= escapedSecretPattern(secrets, "bytes")!;
    const view = BYTE_VIEW.decode(bytes);
    const parts: Uint8Array[] = [];
    let from = 0;
    escaped.lastIndex = 0;
    for (let match = escaped.exec(view); match; match = escaped.exec(view)) {
      parts.push(bytes.subarray(from, match.index), REDACTED_BYTES);
      from = match.index + match[0].length;
    }
    if (parts.length === 0) return bytes;
    parts.push(bytes.subarray(from));
    return joined(parts);
  }

  return {
    push(chunk) {
      let bytes: Uint8Array;
      if (line.length > 0) {
        lineBytes += chunk.length;
        if (allOf(chunk, alphabet) && lineBytes <= MAX_HELD_RUN) {
          line.push(chunk);
          return EMPTY;
        }
        bytes = joined([...line, chunk]);
        line = [];
      } else bytes = held.length === 0 ? chunk : joined([held, chunk]);
      held = EMPTY;
      for (const pattern of patterns) {
        const at = indexOfMarker(bytes, pattern);
        if (at !== -1) bytes = replaceFrom(bytes, pattern, at);
      }
      // A spelling with escapes is searched for before the run that ends the bytes, when that run may be one under
      // way; a run too long to hold is searched as far as it has come.
      const run = unfinishedRun(bytes, alphabet);
      const overLong = run !== -1 && bytes.length - run > MAX_HELD_RUN;
      const upTo = run === -1 || overLong ? bytes.length : run;
      let searched = upTo;
      if (mayHoldEscaped(bytes, alphabet, upTo)) {
        const clean = withoutEscaped(bytes.subarray(0, upTo));
        if (clean.length !== upTo) bytes = joined([clean, bytes.subarray(upTo)]);
        searched = clean.length;
      }
      let keep = 0;
      for (let i = 0; i < patterns.length; i++) {
        keep = Math.max(keep, secretStartAtEnd(bytes, patterns[i].bytes, beginnings[i]));
      }
      if (run !== -1) keep = Math.max(keep, overLong ? ESCAPED_TAIL : bytes.length - searched);
      if (keep === 0) return bytes;
      const rest = bytes.slice(bytes.length - keep);
      if (run !== -1) {
        line = [rest];
        lineBytes = rest.length;
      } else held = rest;
      return bytes.subarray(0, bytes.length - keep);
    },
    holding: () => held.length > 0 || line.length > 0,
    drop() {
      held = EMPTY;
      line = [];
      lineBytes = 0;
    },
  };
}

/** `bytes` with every occurrence of `pattern`, the first at `at`, replaced by {@linkcode REDACTED}. */
function replaceFrom(bytes: Uint8Array, pattern: ByteMarker, at: number): Uint8Array {
  const parts: Uint8Array[] = [];
  let from = 0;
  while (at !== -1) {
    parts.push(bytes.subarray(from, at), REDACTED_BYTES);
    from = at + pattern.bytes.length;
    at = indexOfMarker(bytes, pattern, from);
  }
  parts.push(bytes.subarray(from));
  return joined(parts);
}

/**
 * For each byte value, the lengths of the proper beginnings of `secret` that end in it, longest first: a chunk that
 * ends in a byte no beginning ends in (an event's line break, for a key) is settled by one look-up.
 */
function beginningsByLastByte(secret: Uint8Array): (number[] | undefined)[] {
  const table = new Array<number[] | undefined>(256).fill(undefined);
  for (let length = secret.length - 1; length >= 1; length--) (table[secret[length - 1]] ??= []).push(length);
  return table;
}

/** The length of the longest end of `bytes` that is a proper beginning of `secret` (0 for none). */
function secretStartAtEnd(bytes: Uint8Array, secret: Uint8Array, beginnings: (number[] | undefined)[]): number {
  const lengths = beginnings[bytes[bytes.length - 1]];
  if (!lengths) return 0;
  for (const length of lengths) {
    if (length > bytes.length) continue;
    let i = bytes.length - 2;
    let j = length - 2;
    while (j >= 0 && bytes[i] === secret[j]) {
      i--;
      j--;
    }
    if (j < 0) return length;
  }
  return 0;
}

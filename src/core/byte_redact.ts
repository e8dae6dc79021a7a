/**
 * @module Secrets taken out of bytes on their way to a client, chunk by chunk: each is searched for in the bytes as
 * they are (never decoded), and the few bytes at a chunk's end that could begin one are held back until the next
 * chunk shows whether they do, so a secret split across two chunks is caught as well.
 */
import { type ByteMarker, bytePattern, indexOfMarker } from "./byte_search.ts";
import { joined } from "./bytes.ts";
import { REDACTED, secretForms } from "./redact.ts";

const REDACTED_BYTES = new TextEncoder().encode(REDACTED);
const EMPTY = new Uint8Array(0);

/** Secrets taken out of one stream's bytes. */
export interface ByteRedactor {
  /** What of the bytes held so far and `chunk` may go out now, each secret replaced; may be empty. */
  push(chunk: Uint8Array): Uint8Array;
  /** True while bytes that could begin a secret are held back. */
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
  let held = EMPTY;
  return {
    push(chunk) {
      let bytes = held.length === 0 ? chunk : joined([held, chunk]);
      for (const pattern of patterns) {
        const at = indexOfMarker(bytes, pattern);
        if (at !== -1) bytes = replaceFrom(bytes, pattern, at);
      }
      let keep = 0;
      for (let i = 0; i < patterns.length; i++) {
        keep = Math.max(keep, secretStartAtEnd(bytes, patterns[i].bytes, beginnings[i]));
      }
      held = keep === 0 ? EMPTY : bytes.slice(bytes.length - keep);
      return keep === 0 ? bytes : bytes.subarray(0, bytes.length - keep);
    },
    holding: () => held.length > 0,
    drop() {
      held = EMPTY;
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

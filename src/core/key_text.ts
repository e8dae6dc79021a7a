/**
 * @module The bound on a client's text in a KV key: an id, a name or a filter value longer than it was never stored,
 * so a read by it finds nothing without asking KV, which refuses keys over 2 KB with an error instead of an answer.
 */
import { z } from "zod";

/**
 * The most UTF-8 bytes of one client-given part of a KV key. A key of KV holds at most 2048 bytes in all, and one
 * holds a client's part beside others (a request log index: the filter, the time, a request id of up to 128
 * characters); every id or name the gateway makes or accepts is far shorter (ids under 40 characters, names 64).
 */
export const MAX_KEY_TEXT_BYTES = 512;

const encoder = new TextEncoder();

/** True when `text` may be a part of a KV key: at most {@linkcode MAX_KEY_TEXT_BYTES} bytes in UTF-8. */
export function fitsKey(text: string): boolean {
  // No character takes more than 3 UTF-8 bytes per UTF-16 unit, so most texts are decided without encoding them.
  if (text.length * 3 <= MAX_KEY_TEXT_BYTES) return true;
  return text.length <= MAX_KEY_TEXT_BYTES && encoder.encode(text).byteLength <= MAX_KEY_TEXT_BYTES;
}

/** A non-empty filter value that fits a KV key; a longer one is a 400 naming its field. */
export const KeyText = z.string().min(1).refine(fitsKey, `must be at most ${MAX_KEY_TEXT_BYTES} bytes`);

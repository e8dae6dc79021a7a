/**
 * @module The small parts of running a stdio server: its state as the console shows it, the restart backoff, and
 * splitting its output into lines without holding more than a bound of any one line.
 */
import { joined } from "../core/bytes.ts";

/** A server's state: not started yet, starting, up, or down (with why, and when it is started again). */
export interface LinkState {
  state: "idle" | "starting" | "up" | "down";
  /** Why it is down, in words safe to show an operator. */
  error?: string;
  /** Epoch milliseconds since when it has been in this state. */
  since?: number;
  /** How many times it was started again after it exited. */
  restarts: number;
  /** Epoch milliseconds when a down server is started again. */
  retry_at?: number;
}

/** The wait before restart number `failures` in a row: at once the first time, then 1 s doubling up to a minute. */
export function backoffMs(failures: number): number {
  return failures <= 1 ? 0 : Math.min(60_000, 1000 * 2 ** (failures - 2));
}

/** One line of output; `tooLarge` when it was longer than the bound, and then `text` is only its start. */
export interface Line {
  text: string;
  tooLarge: boolean;
  /** The end of a line too large: the last bytes it had. */
  tail?: string;
}

/** How much of a line too large is kept at each end: enough to find its id. */
const KEPT = 4096;

/** Splits bytes into lines (LF, an optional CR before it dropped); of a line past `maxBytes` only 4 KB at each end. */
export function lineSplitter(maxBytes: number): { push(chunk: Uint8Array): Line[] } {
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let size = 0;
  let over = false;
  let head = "";
  let tail = new Uint8Array(0);
  return {
    push(chunk) {
      const lines: Line[] = [];
      let start = 0;
      for (;;) {
        const end = chunk.indexOf(10, start);
        const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
        if (!over && size + piece.byteLength > maxBytes) {
          over = true;
          const whole = joined([...parts, piece]);
          head = decoder.decode(whole.subarray(0, KEPT));
          tail = whole.slice(-KEPT);
          parts = [];
        } else if (over) {
          tail = joined([tail, piece]).slice(-KEPT);
        } else {
          parts.push(piece);
        }
        size += piece.byteLength;
        if (end === -1) break;
        if (over) lines.push({ text: head, tooLarge: true, tail: decoder.decode(tail) });
        else {
          const text = decoder.decode(joined(parts));
          lines.push({ text: text.endsWith("\r") ? text.slice(0, -1) : text, tooLarge: false });
        }
        parts = [];
        size = 0;
        over = false;
        head = "";
        start = end + 1;
      }
      return lines.filter((line) => line.tooLarge || line.text.trim() !== "");
    },
  };
}

/**
 * @module Watching a passthrough stream's bytes for the few events the usage meter reads (usage, the end, an
 * error) without decoding the rest: the bytes are cut into whole events at blank lines, and only a run of events
 * holding one of the meter's markers is decoded and parsed. Streams with CR line endings are parsed whole.
 */
import { hasAnyMarker, type MarkerSet } from "../core/byte_search.ts";
import { type SseMessage, SseParser } from "../core/sse.ts";

const LF = 10;
const CR = 13;

/** An event left unfinished this long is parsed as it comes instead of being held for its end. */
const MAX_CARRY_BYTES = 64 * 1024;

/** The index just past the last blank line ("\n\n") in `bytes`, or 0 when there is none. */
export function lastEventEnd(bytes: Uint8Array): number {
  const n = bytes.length;
  if (n >= 2 && bytes[n - 1] === LF && bytes[n - 2] === LF) return n;
  for (let i = bytes.lastIndexOf(LF); i > 0; i = bytes.lastIndexOf(LF, i - 1)) {
    if (bytes[i - 1] === LF) return i + 1;
  }
  return 0;
}

/** Feeds a passthrough stream's bytes to `onEvent`, as far as any event among them can matter. */
export interface StreamWatch {
  /** Looks at the next chunk of the stream. */
  push(bytes: Uint8Array): void;
  /** The stream has ended: an event still open is read as if a blank line closed it. */
  end(): void;
}

/**
 * A watch that hands `onEvent` every event whose bytes hold one of `markers`; events without any are skipped
 * unread, so `onEvent` must not care about them.
 */
export function streamWatch(markers: MarkerSet, onEvent: (message: SseMessage) => void): StreamWatch {
  const decoder = new TextDecoder();
  const parser = new SseParser();
  // Bytes of an event not yet ended (only while such an event is open).
  let carry: Uint8Array | undefined;
  // Set once a CR shows up: such line endings are left to the parser, which handles them all.
  let whole = false;

  function read(bytes: Uint8Array): void {
    for (const message of parser.push(decoder.decode(bytes, { stream: true }))) onEvent(message);
  }
  function giveUpCutting(): void {
    whole = true;
    if (carry) read(carry);
    carry = undefined;
  }
  return {
    push(bytes) {
      // A chunk that ends an event with "\n\n" is cut there whatever line endings came before it; only another end
      // asks for the search for a CR, which costs a pass over every byte.
      const n = bytes.length;
      const endsEvent = n >= 2 && bytes[n - 1] === LF && bytes[n - 2] === LF;
      if (!whole && !endsEvent && bytes.indexOf(CR) !== -1) giveUpCutting();
      if (whole) return read(bytes);
      let data = bytes;
      if (carry) {
        data = new Uint8Array(carry.length + bytes.length);
        data.set(carry);
        data.set(bytes, carry.length);
      }
      const cut = lastEventEnd(data);
      if (cut > 0 && hasAnyMarker(data, markers, cut)) read(cut === data.length ? data : data.subarray(0, cut));
      carry = cut === data.length ? undefined : data.subarray(cut);
      if (carry && carry.length > MAX_CARRY_BYTES) giveUpCutting();
    },
    end() {
      if (carry) read(carry);
      carry = undefined;
      for (const message of parser.push(decoder.decode() + "\n\n")) onEvent(message);
    },
  };
}

/**
 * @module What has just gone out to a stream's client: whether its last bytes end an SSE event, so a keep-alive or an
 * error event may follow at once (a passthrough stream, or a large translated event sent in slices, may stop inside
 * one). What a keep-alive is to each client protocol is that protocol's (src/protocols/).
 */
const LF = 10;
const CR = 13;

/** The last four bytes sent to a client; it starts as if an event had just ended. */
export interface EventTail {
  /** Takes note of bytes as they are sent. */
  note(bytes: Uint8Array): void;
  /** True when what was sent last ends an SSE event. */
  endsEvent(): boolean;
}

export function eventTail(): EventTail {
  const tail = new Uint8Array([0, 0, LF, LF]);
  return {
    note(bytes) {
      const n = bytes.length;
      // Four assignments, not a view of the last four bytes: this runs for every chunk of every stream.
      if (n >= 4) {
        tail[0] = bytes[n - 4];
        tail[1] = bytes[n - 3];
        tail[2] = bytes[n - 2];
        tail[3] = bytes[n - 1];
        return;
      }
      for (let i = 0; i < n; i++) {
        tail.copyWithin(0, 1);
        tail[3] = bytes[i];
      }
    },
    endsEvent() {
      if (tail[3] === LF && (tail[2] === LF || (tail[2] === CR && tail[1] === LF))) return true;
      return tail[3] === CR && tail[2] === CR;
    },
  };
}

/**
 * @module Sending on a Responses socket without unbounded buffering: past a high-water mark of bytes the client has
 * not taken yet, the sender waits for them to go down before it sends more, so a client that stops reading holds the
 * upstream stream back as an HTTP client does, instead of growing the gateway's memory.
 */

/** What the sender needs of a socket (a WebSocket, or a stand-in in tests). */
export interface SendTarget {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(text: string): void;
}

/** Options for {@linkcode pacedSend}. */
export interface PacedSendOptions {
  /** Buffered bytes past which the sender waits. */
  highWater: number;
  /** Buffered bytes at which it goes on. */
  lowWater: number;
  /** Waits a moment before the buffer is looked at again (a socket tells no event when it drains). */
  pause(): Promise<void>;
}

/** Buffered bytes past which a socket's sender waits, and at which it goes on (defaults of {@linkcode pacedSend}). */
export const SEND_WATER = { highWater: 1024 * 1024, lowWater: 256 * 1024 };

/**
 * A send function for `socket`: sends at once while the socket is open, and returns a promise to await before the
 * next send when the client is behind; undefined otherwise, so the common case costs no wait.
 */
export function pacedSend(socket: SendTarget, options: PacedSendOptions): (text: string) => Promise<void> | undefined {
  const OPEN = 1;
  async function drain(): Promise<void> {
    while (socket.readyState === OPEN && socket.bufferedAmount > options.lowWater) await options.pause();
  }
  return (text) => {
    if (socket.readyState !== OPEN) return undefined;
    socket.send(text);
    return socket.bufferedAmount > options.highWater ? drain() : undefined;
  };
}

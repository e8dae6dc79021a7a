/**
 * @module Sending on a Responses socket without unbounded buffering. A response's events are paced: past a high-water
 * mark of bytes the client has not taken yet, the sender waits for them to go down before it sends more, so a client
 * that stops reading holds the upstream stream back as an HTTP client does. The socket's own events (an error for a
 * message, a warm-up's answer) cannot wait, as nothing holds them back: while the client is behind they queue, and
 * past a bound of queued bytes the sender gives up on the client (the session then closes the socket), so a client
 * that sends without reading cannot grow the gateway's memory.
 */

/** What the sender needs of a socket (a WebSocket, or a stand-in in tests). */
export interface SendTarget {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(text: string): void;
}

/** Options for {@linkcode socketSender}. */
export interface SenderOptions {
  /** Buffered bytes past which the sender holds back. */
  highWater: number;
  /** Buffered bytes at which it goes on. */
  lowWater: number;
  /** Bytes of the socket's own events that may wait for the client; one more and `overflow` is called. */
  maxQueued: number;
  /** Waits a moment before the buffer is looked at again (a socket tells no event when it drains). */
  pause(): Promise<void>;
  /** The client is too far behind: called once, the first time the queue passes `maxQueued`. */
  overflow(): void;
}

/** Bytes past which a socket's sender holds back, at which it goes on, and that its own events may queue. */
export const SEND_WATER = { highWater: 1024 * 1024, lowWater: 256 * 1024, maxQueued: 1024 * 1024 };

/** The two ways of sending on one socket, in one order. */
export interface SocketSender {
  /**
   * Sends a response's event: at once while the client keeps up, returning a promise to await before the next one
   * when it is behind; undefined otherwise, so the common case costs no wait.
   */
  stream(text: string): Promise<void> | undefined;
  /** Sends one of the socket's own events, now or, while the client is behind, once it has caught up. */
  event(text: string): void;
  /** Bytes of the socket's own events waiting for the client. */
  queued(): number;
}

/** A sender for `socket`. */
export function socketSender(socket: SendTarget, options: SenderOptions): SocketSender {
  const OPEN = 1;
  // Texts waiting for the client, in order; a response's event carries the resolver its stream waits on.
  const queue: Array<{ text: string; own: boolean; sent?: () => void }> = [];
  let queuedBytes = 0;
  let flushing = false;
  let overflowed = false;
  const behind = () => socket.bufferedAmount > options.highWater;

  async function drain(): Promise<void> {
    while (socket.readyState === OPEN && socket.bufferedAmount > options.lowWater) await options.pause();
  }

  async function flush(): Promise<void> {
    flushing = true;
    try {
      while (queue.length > 0) {
        await drain();
        const next = queue.shift()!;
        if (next.own) queuedBytes -= next.text.length;
        if (socket.readyState === OPEN) socket.send(next.text);
        next.sent?.();
      }
    } finally {
      flushing = false;
    }
  }

  return {
    stream(text) {
      if (socket.readyState !== OPEN) return undefined;
      if (queue.length > 0) {
        const { promise, resolve } = Promise.withResolvers<void>();
        queue.push({ text, own: false, sent: resolve });
        return promise;
      }
      socket.send(text);
      return behind() ? drain() : undefined;
    },
    event(text) {
      if (socket.readyState !== OPEN || overflowed) return;
      if (queue.length === 0 && !behind()) return socket.send(text);
      queue.push({ text, own: true });
      queuedBytes += text.length;
      if (queuedBytes > options.maxQueued) {
        overflowed = true;
        options.overflow();
        return;
      }
      if (!flushing) void flush();
    },
    queued: () => queuedBytes,
  };
}

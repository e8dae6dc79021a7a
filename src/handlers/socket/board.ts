/**
 * @module The Responses sockets open in this process: how many each token holds, how many in all, and the bytes of
 * conversation they may keep together.
 */
import type { MemoryPool } from "../../conversations/memory_pool.ts";

/** Counts open sockets per token, so one token cannot hold an unbounded number of them. */
export interface SocketBoard {
  /** Takes a place for one more socket of `token`; undefined when it already holds `max`. The result frees it. */
  open(token: string, max: number): (() => void) | undefined;
  /** Sockets open now, over all tokens. */
  count(): number;
  /** Resolves once no socket is open (at once when none is). */
  drained(): Promise<void>;
  /** What all sockets keep of their conversations (responses_socket.total_memory_bytes). */
  memory: MemoryPool;
}

/** An empty board whose sockets keep their conversations in `memory`. */
export function createSocketBoard(memory: MemoryPool): SocketBoard {
  const held = new Map<string, number>();
  let total = 0;
  const waiting: Array<() => void> = [];
  return {
    open(token, max) {
      const now = held.get(token) ?? 0;
      if (now >= max) return undefined;
      held.set(token, now + 1);
      total++;
      let freed = false;
      return () => {
        if (freed) return;
        freed = true;
        total--;
        const left = (held.get(token) ?? 1) - 1;
        if (left > 0) held.set(token, left);
        else held.delete(token);
        if (total === 0) { for (const resolve of waiting.splice(0)) resolve(); }
      };
    },
    count: () => total,
    memory,
    drained() {
      if (total === 0) return Promise.resolve();
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
  };
}

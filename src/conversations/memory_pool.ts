/**
 * @module The bytes all Responses sockets of the process may keep of their conversations together
 * (`responses_socket.total_memory_bytes`): one count, taken from before a socket keeps a response and given back when
 * it lets it go. With `serve --workers N` the count lives in memory the workers share, so the bound is the process's.
 */

/** A bounded count of bytes, shared by every socket that takes from it. */
export interface MemoryPool {
  /** The bound, in bytes. */
  readonly limit: number;
  /** Takes `bytes` when they fit under the bound; false (and nothing taken) when they do not. */
  take(bytes: number): boolean;
  /** Gives back `bytes` taken before. */
  give(bytes: number): void;
  /** Bytes taken now. */
  held(): number;
}

/** The shared memory one pool's count lives in, made once per process and handed to every worker. */
export function poolMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT);
}

/** A pool of `limit` bytes, counted in `shared` (every worker given the same one shares the bound) or alone. */
export function memoryPool(limit: number, shared: SharedArrayBuffer = poolMemory()): MemoryPool {
  const count = new BigInt64Array(shared);
  const max = BigInt(limit);
  return {
    limit,
    take(bytes) {
      const amount = BigInt(bytes);
      // Taken first and given back when over, so two workers taking at once never both pass the bound.
      if (Atomics.add(count, 0, amount) + amount <= max) return true;
      Atomics.sub(count, 0, amount);
      return false;
    },
    give(bytes) {
      Atomics.sub(count, 0, BigInt(bytes));
    },
    held: () => Number(Atomics.load(count, 0)),
  };
}

/**
 * @module Writing a batch to KV in as few atomic commits as KV's limit on mutations allows, an item's mutations always
 * in one commit, each commit retried while another process holds the KV file. What cannot be written for now is
 * handed back, so nothing of the batch is lost (a full disk or an I/O error included); an item the store refuses on
 * its own is dropped, so it cannot hold back the rest.
 */
import { isStoreFault, KvWriteFailed, type KvWriter } from "../core/kv_write.ts";

/** One KV mutation: a value set (with its expiry), or a sum added. */
export type KvMutation =
  | { set: Deno.KvKey; value: unknown; expireIn?: number }
  | { sum: Deno.KvKey; value: bigint };

// Deno KV accepts up to 1000 mutations per atomic commit, but a commit holds the event loop while it writes (about
// 12 us a mutation here): 500 kept every request waiting up to 8-9 ms, once per usage flush and commit, which showed
// in the p99 latency; 100 keep each wait near 2 ms for about a fifth more write time.
const MUTATIONS_PER_COMMIT = 100;

/** Options for {@linkcode commitAll}. */
export interface CommitOptions<T> {
  writes: KvWriter;
  operation: string;
  mutations(item: T): KvMutation[];
  /** Hears each item dropped because the store refused it alone (a key too long, a sum past 64 bits). */
  dropped?(item: T, error: unknown): void;
  /** Give-ups are counted but not logged: the caller logs the episode they belong to. */
  quiet?: boolean;
}

/**
 * True when KV refused the commit's content: a RangeError (a sum past 64 bits) or a TypeError (a key or value too
 * large, a value it cannot store). Trying the same content again cannot help. A busy store, and a file that fails
 * (full, an I/O error), which Deno KV reports as a TypeError too, take the same content once they recover.
 */
function refused(err: unknown): err is KvWriteFailed {
  if (!(err instanceof KvWriteFailed) || err.reason !== "failed" || isStoreFault(err.cause)) return false;
  return err.cause instanceof RangeError || err.cause instanceof TypeError;
}

/**
 * Commits `items` through `writes` under the name `operation`; resolves with the items not written (none when all
 * were), from the first commit that gave up on. The give-up itself is logged and counted by the writer. With
 * `dropped`, a commit whose content KV refuses is tried again item by item: the items it refuses alone are dropped
 * (and heard), the others written.
 */
export async function commitAll<T>(kv: Deno.Kv, items: readonly T[], options: CommitOptions<T>): Promise<T[]> {
  const mutations = items.map(options.mutations);
  const commit = (start: number, end: number) =>
    options.writes.write(options.operation, async () => {
      const op = kv.atomic();
      for (const mutation of mutations.slice(start, end).flat()) {
        if ("sum" in mutation) op.sum(mutation.sum, mutation.value);
        else op.set(mutation.set, mutation.value, { expireIn: mutation.expireIn });
      }
      await op.commit();
    }, { quiet: options.quiet });
  for (let start = 0; start < items.length;) {
    let end = start + 1;
    let size = mutations[start].length;
    while (end < items.length && size + mutations[end].length <= MUTATIONS_PER_COMMIT) size += mutations[end++].length;
    try {
      await commit(start, end);
    } catch (err) {
      if (!options.dropped || !refused(err)) return items.slice(start);
      for (let i = start; i < end; i++) {
        try {
          await commit(i, i + 1);
        } catch (err) {
          if (!refused(err)) return items.slice(i);
          options.dropped(items[i], err.cause);
        }
      }
    }
    start = end;
  }
  return [];
}

/**
 * @module Writing a batch to KV in as few atomic commits as KV's limit on mutations allows, an item's mutations always
 * in one commit, each commit retried while another process holds the KV file. What cannot be written is handed back,
 * so nothing of the batch is lost.
 */
import type { KvWriter } from "../core/kv_write.ts";

/** One KV mutation: a value set (with its expiry), or a sum added. */
export type KvMutation =
  | { set: Deno.KvKey; value: unknown; expireIn?: number }
  | { sum: Deno.KvKey; value: bigint };

// Deno KV accepts up to 1000 mutations per atomic commit; stay well under it.
const MUTATIONS_PER_COMMIT = 500;

/**
 * Commits `items` through `writes` under the name `operation`; resolves with the items not written (none when all
 * were), from the first commit that gave up on. The give-up itself is logged and counted by the writer.
 */
export async function commitAll<T>(
  kv: Deno.Kv,
  items: readonly T[],
  options: { writes: KvWriter; operation: string; mutations(item: T): KvMutation[] },
): Promise<T[]> {
  const mutations = items.map(options.mutations);
  for (let start = 0; start < items.length;) {
    let end = start + 1;
    let size = mutations[start].length;
    while (end < items.length && size + mutations[end].length <= MUTATIONS_PER_COMMIT) size += mutations[end++].length;
    try {
      await options.writes.write(options.operation, async () => {
        const op = kv.atomic();
        for (const mutation of mutations.slice(start, end).flat()) {
          if ("sum" in mutation) op.sum(mutation.sum, mutation.value);
          else op.set(mutation.set, mutation.value, { expireIn: mutation.expireIn });
        }
        await op.commit();
      });
    } catch {
      return items.slice(start);
    }
    start = end;
  }
  return [];
}

/**
 * @module KV reads and writes of the response store in batches of KV's limits: getMany batches sent together (one
 * round trip's wait however many keys), and sets or deletes in as few atomic commits as KV's size and count allow.
 */
import type { KvWriter } from "../core/kv_write.ts";

/** Bytes per atomic commit, below KV's 800 KiB. */
const COMMIT_BYTES = 600_000;
/** Writes per atomic commit, below KV's 1000 mutations. */
const COMMIT_KEYS = 500;
/** Keys per getMany, KV's limit. */
const READ_KEYS = 10;

/** Batched reads and writes over `kv`; written keys expire after `ttl` ms. */
export function kvBatches(kv: Deno.Kv, kvWrites: KvWriter, ttl: number) {
  /** Every key's entry, by getMany batches sent together: one round trip's wait however many there are. */
  async function getAll<T>(keys: readonly Deno.KvKey[]): Promise<Deno.KvEntryMaybe<T>[]> {
    const batches: Promise<Deno.KvEntryMaybe<T>[]>[] = [];
    for (let at = 0; at < keys.length; at += READ_KEYS) batches.push(kv.getMany<T[]>(keys.slice(at, at + READ_KEYS)));
    return (await Promise.all(batches)).flat();
  }

  /** Sets (value) or deletes (undefined) keys in as few commits as KV's limits allow, in order. */
  async function writeAll(writes: readonly [Deno.KvKey, unknown][]): Promise<void> {
    const commits: [Deno.KvKey, unknown][][] = [];
    let batch: [Deno.KvKey, unknown][] = [];
    let bytes = 0;
    for (const write of writes) {
      const size = write[1] instanceof Uint8Array ? write[1].byteLength : 256;
      if (batch.length > 0 && (batch.length >= COMMIT_KEYS || bytes + size > COMMIT_BYTES)) {
        commits.push(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(write);
      bytes += size;
    }
    if (batch.length > 0) commits.push(batch);
    // Each commit is retried while another process holds the KV file; one that gives up fails the whole write.
    for (const commit of commits) {
      await kvWrites.write("response_store", async () => {
        const op = kv.atomic();
        for (const [key, value] of commit) {
          if (value === undefined) op.delete(key);
          else op.set(key, value, { expireIn: ttl });
        }
        await op.commit();
      });
    }
  }

  return { getAll, writeAll };
}

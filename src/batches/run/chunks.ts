/**
 * @module Text kept in KV across several values: a KV value holds at most 64 KiB, so a request or a result is cut
 * into parts under one key prefix, written in as many atomic commits as their size needs, and read back in order.
 */

/** Bytes of one part: under KV's 64 KiB value limit with room for its encoding. */
export const PART_BYTES = 60 * 1024;

/** `text` as UTF-8 parts of at most {@linkcode PART_BYTES}. */
export function cutParts(text: string): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.byteLength; at += PART_BYTES) parts.push(bytes.slice(at, at + PART_BYTES));
  return parts;
}

/** Bytes one atomic commit carries at most here (KV's bound is about 800 KiB of keys and values). */
const COMMIT_BYTES = 512 * 1024;
/** Mutations one atomic commit carries at most here (KV's bound is 1000). */
const COMMIT_MUTATIONS = 500;

/** Sets gathered into as few atomic commits as KV's bounds allow: each commit is a write to the disk. */
export interface WriteBatch {
  set(key: Deno.KvKey, value: unknown, bytes: number): Promise<void>;
  /** Commits what is gathered. */
  flush(): Promise<void>;
}

/** A write batch over `kv`, every entry expiring in `expireIn` ms. */
export function writeBatch(kv: Deno.Kv, expireIn: number): WriteBatch {
  let op = kv.atomic();
  let bytes = 0;
  let count = 0;
  async function flush(): Promise<void> {
    if (count === 0) return;
    const done = await op.commit();
    if (!done.ok) throw new Error("KV refused a batch's entries");
    op = kv.atomic();
    bytes = 0;
    count = 0;
  }
  return {
    async set(key, value, size) {
      if (count + 1 > COMMIT_MUTATIONS || bytes + size > COMMIT_BYTES) await flush();
      op.set(key, value, { expireIn });
      bytes += size;
      count++;
    },
    flush,
  };
}

/**
 * Writes `text` under `prefix` (`[...prefix, 0]`, `[...prefix, 1]`, …) through `batch`; returns how many parts and
 * bytes it took. The parts are in KV once the batch is flushed.
 */
export async function writeParts(
  batch: WriteBatch,
  prefix: Deno.KvKey,
  text: string,
): Promise<{ parts: number; bytes: number }> {
  const parts = cutParts(text);
  for (const [index, part] of parts.entries()) await batch.set([...prefix, index], part, part.byteLength);
  return { parts: parts.length, bytes: parts.reduce((sum, part) => sum + part.byteLength, 0) };
}

/** The text written under `prefix` in `count` parts, or undefined when a part is gone (expired or deleted). */
export async function readParts(kv: Deno.Kv, prefix: Deno.KvKey, count: number): Promise<string | undefined> {
  if (count === 0) return "";
  const parts: Uint8Array[] = [];
  for await (const entry of kv.list<Uint8Array>({ prefix }, { batchSize: Math.min(count, 500) })) {
    parts.push(entry.value);
  }
  if (parts.length !== count) return undefined;
  const whole = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return new TextDecoder().decode(whole);
}

/** Deletes every entry under `prefix`, a few hundred per commit. */
export async function deletePrefix(kv: Deno.Kv, prefix: Deno.KvKey): Promise<void> {
  let op = kv.atomic();
  let pending = 0;
  for await (const entry of kv.list({ prefix })) {
    op.delete(entry.key);
    if (++pending === 500) {
      await op.commit();
      op = kv.atomic();
      pending = 0;
    }
  }
  if (pending > 0) await op.commit();
}

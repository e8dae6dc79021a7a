/**
 * @module Text kept in KV across several values: a KV value holds at most 64 KiB, so a request or a result is cut
 * into parts under one key prefix, written in as many atomic commits as their size needs, and read back in order.
 */

/** Bytes of one part: under KV's 64 KiB value limit with room for its encoding. */
export const PART_BYTES = 60 * 1024;

/** Mutations one atomic commit carries at most here (KV's bound is 1000, and about 800 KiB of them). */
const PARTS_PER_COMMIT = 10;

/** `text` as UTF-8 parts of at most {@linkcode PART_BYTES}. */
export function cutParts(text: string): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.byteLength; at += PART_BYTES) parts.push(bytes.slice(at, at + PART_BYTES));
  return parts;
}

/** Writes `text` under `prefix` (`[...prefix, 0]`, `[...prefix, 1]`, …); returns how many parts and bytes it took. */
export async function writeParts(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  text: string,
  expireIn: number,
): Promise<{ parts: number; bytes: number }> {
  const parts = cutParts(text);
  for (let first = 0; first < parts.length; first += PARTS_PER_COMMIT) {
    const op = kv.atomic();
    parts.slice(first, first + PARTS_PER_COMMIT).forEach((part, i) =>
      op.set([...prefix, first + i], part, { expireIn })
    );
    const done = await op.commit();
    if (!done.ok) throw new Error("KV refused a part of a batch's text");
  }
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

/**
 * @module When the gateway first served each model, kept in KV: the listing date of a model the config gives no
 * `created_at`, the same on every instance sharing the KV and after every restart (never the epoch, which clients
 * that show dates display as 1970).
 */
import type { Config } from "../core/config.ts";
import { createKvWriter, type KvWriter, RETRY } from "../core/kv_write.ts";

/** KV key of a model's first-served time: ["model_first_served", id] -> ISO string. */
export function firstServedKey(id: string): Deno.KvKey {
  return ["model_first_served", id];
}

/** The public model ids whose listing entry (the first the config gives for the id) has no `created_at`. */
export function undatedModels(config: Config): string[] {
  const dated = new Map<string, boolean>();
  for (const upstream of config.upstreams) {
    for (const entry of upstream.models) {
      const id = typeof entry === "string" ? entry : entry.id;
      if (!dated.has(id)) dated.set(id, typeof entry !== "string" && entry.created_at !== undefined);
    }
  }
  return [...dated].filter(([, has]) => !has).map(([id]) => id);
}

/** KV reads at most this many keys at once. */
const BATCH = 10;

/**
 * When each model of `ids` was first served, recording `now` for those never served before. The first instance to
 * record a model wins; one that loses the race reads the winner's time.
 */
export async function recordFirstServed(
  kv: Deno.Kv,
  ids: readonly string[],
  now: Date,
  options: { writes?: KvWriter } = {},
): Promise<Map<string, string>> {
  const writes = options.writes ?? createKvWriter({ log: () => {} });
  const out = new Map<string, string>();
  for (let at = 0; at < ids.length; at += BATCH) {
    const keys = ids.slice(at, at + BATCH).map(firstServedKey);
    const entries = await writes.write("model_first_served", async () => {
      const entries = await kv.getMany<string[]>(keys);
      const missing = entries.filter((entry) => entry.value === null);
      if (missing.length === 0) return entries;
      const write = kv.atomic();
      for (const entry of missing) write.check(entry).set(entry.key, now.toISOString());
      // Another instance recorded one of them meanwhile: read again, and keep its times.
      return (await write.commit()).ok ? entries : RETRY;
    });
    for (const entry of entries) out.set(String(entry.key[1]), entry.value ?? now.toISOString());
  }
  return out;
}

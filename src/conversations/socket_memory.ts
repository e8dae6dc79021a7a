/**
 * @module What one Responses socket remembers of its completed responses, so that a turn with `store: false` can
 * continue the last response of its stream with only its new items: bounded per socket (`memory_bytes`, the oldest
 * let go first) and over all sockets of the process (a {@linkcode MemoryPool}). A conversation is kept as the JSON
 * text it is sent upstream as, so the bytes counted are the bytes held; a response that could not be kept is
 * remembered by id with the reason, for the error that answers a turn continuing it.
 */
import type { JsonObject } from "../core/types.ts";
import type { MemoryPool } from "./memory_pool.ts";
import { inputItems } from "./resolve.ts";

/** A completed response as the socket keeps it. */
export interface Remembered {
  id: string;
  /** The socket's stream (`stream_id`) it was made on; "" for the default one. */
  stream: string;
  /** Its whole conversation as sent upstream (the input, then the response's output items): JSON text, no brackets. */
  items: string;
  /** A stored response the conversation continues further back (resolved from KV as usual). */
  previous?: string;
  /** Whether the text holds a character past Latin-1: the runtime then keeps two bytes for each character. */
  wide: boolean;
  /** The bytes the text takes in memory, what the bounds count. */
  bytes: number;
}

/** The connection-local memory of one socket. */
export interface SocketMemory {
  /** The remembered response `id`, when the socket still holds it. */
  recall(id: string): Remembered | undefined;
  /** Why the response `id` is not held, when it was let go or never kept (recent ones only); else undefined. */
  forgotten(id: string): string | undefined;
  /** Keeps `entry` as its stream's last response; false when no room was found for it (then nothing is kept). */
  remember(entry: Remembered): boolean;
  /** Bytes held now. */
  bytes(): number;
  /** Lets everything go and keeps nothing from then on (the socket is done), giving the bytes back to the pool. */
  clear(): void;
}

/** How many ids of responses let go are remembered with the reason. */
const FORGOTTEN_KEPT = 32;

/** A memory that holds at most `limitBytes` of conversation over all the socket's streams, taken from `pool`. */
export function socketMemory(limitBytes: number, pool: MemoryPool): SocketMemory {
  // Insertion order is the order responses completed: the first entry is the oldest.
  const entries = new Map<string, Remembered>();
  const forgotten = new Map<string, string>();
  let held = 0;
  let done = false;
  const forget = (id: string, why: string) => {
    forgotten.delete(id);
    forgotten.set(id, why);
    if (forgotten.size > FORGOTTEN_KEPT) forgotten.delete(forgotten.keys().next().value!);
  };
  const drop = (entry: Remembered, why?: string) => {
    entries.delete(entry.id);
    held -= entry.bytes;
    pool.give(entry.bytes);
    if (why) forget(entry.id, why);
  };
  const perSocket = `it was let go to keep this socket's memory within responses_socket.memory_bytes (${limitBytes})`;
  const overall = `the gateway's memory for socket conversations was full (responses_socket.total_memory_bytes, ` +
    `${pool.limit})`;
  return {
    recall: (id) => entries.get(id),
    forgotten: (id) => forgotten.get(id),
    remember(entry) {
      // A turn that ends after its socket did (a warm-up still running at the close) would hold bytes nothing frees.
      if (done) return false;
      // Only the last response of a stream can be continued from memory, as the API keeps only the latest one.
      for (const old of entries.values()) if (old.stream === entry.stream) drop(old);
      const { bytes } = entry;
      if (bytes > limitBytes) {
        forget(entry.id, `it alone is larger than responses_socket.memory_bytes (${limitBytes})`);
        return false;
      }
      for (const old of entries.values()) {
        if (held + bytes <= limitBytes) break;
        drop(old, perSocket);
      }
      // The process's bound: this socket gives up its own oldest responses first, as it would for its own bound.
      while (!pool.take(bytes)) {
        const oldest = entries.values().next().value;
        if (!oldest) {
          forget(entry.id, overall);
          return false;
        }
        drop(oldest, overall);
      }
      entries.set(entry.id, entry);
      held += bytes;
      return true;
    },
    bytes: () => held,
    clear() {
      done = true;
      for (const entry of [...entries.values()]) drop(entry);
      forgotten.clear();
    },
  };
}

/** Characters the runtime cannot keep in one byte each. */
const WIDE = /[\u0100-\uffff]/;

/** `items` as JSON text without the brackets ("" for none). */
function itemsText(items: readonly JsonObject[]): string {
  return items.length === 0 ? "" : JSON.stringify(items).slice(1, -1);
}

/**
 * The entry for a response that continued `from` (or nothing) with `own` new items and gave `output`: the text of
 * the parts is added to the text already kept, so a long conversation is not serialized again on every turn. A
 * `compaction_trigger` asked for that response only and is not kept, as a stored response does not keep it: the next
 * turn does not ask again.
 */
export function rememberedAfter(
  response: { id: string; stream: string; previous?: string },
  parts: { from?: Remembered; own: JsonObject[]; output: JsonObject[] },
): Remembered {
  const { from } = parts;
  const own = itemsText(parts.own.filter((item) => item.type !== "compaction_trigger"));
  const output = itemsText(parts.output);
  const items = [from?.items ?? "", own, output].filter((text) => text !== "").join(",");
  const wide = (from?.wide ?? false) || WIDE.test(own) || WIDE.test(output);
  return { ...response, items, wide, bytes: items.length * (wide ? 2 : 1) };
}

/**
 * The JSON text of a turn's create body that continues `from`: its conversation, then the turn's own input, put in
 * as text (the conversation is never parsed again). The stored response it goes back to, if any, stays as
 * `previous_response_id` for the pipeline to resolve from KV.
 */
export function continuedBody(body: JsonObject, from: Remembered): string {
  const { input, previous_response_id: _continued, ...rest } = body;
  const head: JsonObject = from.previous ? { ...rest, previous_response_id: from.previous } : rest;
  const items = [from.items, itemsText(inputItems(input))].filter((text) => text !== "").join(",");
  const text = JSON.stringify(head);
  return `${text.slice(0, -1)}${text === "{}" ? "" : ","}"input":[${items}]}`;
}

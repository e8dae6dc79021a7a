/**
 * @module What one Responses socket remembers of its completed responses, so that a turn with `store: false` can
 * continue the last response of its stream with only its new items: bounded in bytes, the oldest let go first.
 */
import type { JsonObject } from "../core/types.ts";
import { inputItems } from "./resolve.ts";

/** A completed response as the socket keeps it. */
export interface Remembered {
  id: string;
  /** The socket's stream (`stream_id`) it was made on; "" for the default one. */
  stream: string;
  /** Its whole conversation as sent upstream: the input, then the response's output items. */
  items: JsonObject[];
  /** A stored response the conversation continues further back (resolved from KV as usual). */
  previous?: string;
  /** The size of `items` as JSON text, what the memory's bound counts. */
  bytes: number;
}

/** The connection-local memory of one socket. */
export interface SocketMemory {
  /** The remembered response `id`, when the socket still holds it. */
  recall(id: string): Remembered | undefined;
  /** Keeps `entry` as its stream's last response; false when it alone is over the bound (then nothing is kept). */
  remember(entry: Remembered): boolean;
  /** Bytes held now. */
  bytes(): number;
}

/** A memory that holds at most `limitBytes` of conversation, over all the socket's streams. */
export function socketMemory(limitBytes: number): SocketMemory {
  // Insertion order is the order responses completed: the first entry is the oldest.
  const entries = new Map<string, Remembered>();
  let held = 0;
  const drop = (entry: Remembered) => {
    entries.delete(entry.id);
    held -= entry.bytes;
  };
  return {
    recall: (id) => entries.get(id),
    remember(entry) {
      // Only the last response of a stream can be continued from memory, as the API keeps only the latest one.
      for (const old of entries.values()) if (old.stream === entry.stream) drop(old);
      const bytes = entry.bytes;
      if (bytes > limitBytes) return false;
      for (const old of entries.values()) {
        if (held + bytes <= limitBytes) break;
        drop(old);
      }
      entries.set(entry.id, entry);
      held += bytes;
      return true;
    },
    bytes: () => held,
  };
}

/**
 * The entry for a response that continued `from` (or nothing) with `own` new items and gave `output`: its size is
 * counted from the parts, so a long conversation is not serialized again on every turn. A `compaction_trigger` asked
 * for that response only and is not kept, as a stored response does not keep it: the next turn does not ask again.
 */
export function rememberedAfter(
  response: { id: string; stream: string; previous?: string },
  parts: { from?: Remembered; own: JsonObject[]; output: JsonObject[] },
): Remembered {
  const { from, output } = parts;
  const own = parts.own.filter((item) => item.type !== "compaction_trigger");
  const added = JSON.stringify(own).length + JSON.stringify(output).length;
  return {
    ...response,
    items: [...from?.items ?? [], ...own, ...output],
    bytes: (from?.bytes ?? 0) + added,
  };
}

/**
 * The body of a turn that continues `from`: its conversation, then the turn's own input. The stored response it
 * goes back to, if any, stays as `previous_response_id` for the pipeline to resolve from KV.
 */
export function continueFrom(body: JsonObject, from: Remembered): JsonObject {
  const whole: JsonObject = { ...body, input: [...from.items, ...inputItems(body.input)] };
  if (from.previous) whole.previous_response_id = from.previous;
  else delete whole.previous_response_id;
  return whole;
}

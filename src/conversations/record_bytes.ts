/**
 * @module A stored response's record as bytes in KV chunks: its JSON with the response object first, so the answer
 * alone (all an item reference needs) is read from the leading chunks, and decoded a range at a time from the chunks
 * as they come, letting each go once read.
 */
import type { JsonObject } from "../core/types.ts";
import { jsonBytes } from "./size.ts";

/** Bytes per chunk: KV's value limit is 65 536 bytes, and a value's encoding adds a little. */
export const CHUNK_BYTES = 60_000;

const OPEN = '{"response":';
/** Where the response object starts in a record's bytes. */
export const RESPONSE_AT = OPEN.length;

const encoder = new TextEncoder();

/** A record as stored, with the sizes its head keeps. */
export interface EncodedRecord {
  chunks: Uint8Array[];
  bytes: number;
  /** Where the response object ends. */
  answerEnd: number;
  /** About the bytes its input and output items add to a conversation made whole. */
  replay: number;
}

/** The record `{"response":…,"input":…}` in chunks; the ids it continues are kept apart from it. */
export function encodeRecord(record: { response: JsonObject; input: JsonObject[] }): EncodedRecord {
  const response = encoder.encode(JSON.stringify(record.response));
  const input = encoder.encode(JSON.stringify(record.input));
  const parts = [encoder.encode(OPEN), response, encoder.encode(',"input":'), input, encoder.encode("}")];
  const bytes = parts.reduce((sum, part) => sum + part.byteLength, 0);
  const chunks: Uint8Array[] = [];
  let chunk = new Uint8Array(Math.min(CHUNK_BYTES, bytes));
  let filled = 0;
  let left = bytes;
  for (const part of parts) {
    for (let at = 0; at < part.byteLength;) {
      const take = Math.min(part.byteLength - at, chunk.byteLength - filled);
      chunk.set(part.subarray(at, at + take), filled);
      at += take;
      filled += take;
      left -= take;
      if (filled === chunk.byteLength && left > 0) {
        chunks.push(chunk);
        chunk = new Uint8Array(Math.min(CHUNK_BYTES, left));
        filled = 0;
      }
    }
  }
  chunks.push(chunk);
  const output = Array.isArray(record.response.output) ? record.response.output : [];
  // The items of both lists, each followed by about a comma in the conversation they join.
  const replay = input.byteLength + jsonBytes(output) - 2;
  return { chunks, bytes, answerEnd: RESPONSE_AT + response.byteLength, replay };
}

/**
 * The text of bytes [`from`, `to`) of the record in `parts`; each part is let go (set to null) once read, so the
 * bytes and the text are not both held whole.
 */
export function decodeRange(parts: (Uint8Array | null)[], from: number, to: number): string {
  const decoder = new TextDecoder();
  let text = "";
  let offset = 0;
  for (let i = 0; i < parts.length && offset < to; i++) {
    const part = parts[i]!;
    const start = Math.max(from - offset, 0);
    const end = Math.min(to - offset, part.byteLength);
    if (end > start) text += decoder.decode(part.subarray(start, end), { stream: true });
    offset += part.byteLength;
    parts[i] = null;
  }
  return text + decoder.decode();
}

/**
 * @module A request body on its way upstream. Given a byte array or a string, the runtime's fetch makes several
 * copies of it before it goes out, and a JSON body serialized whole is one more copy of the request; for a body of
 * many megabytes (a long context, images) that multiplies the process's memory. A large body is handed over as a
 * stream of slices instead: bytes as views of themselves, a JSON body serialized slice by slice as it is sent.
 * Small bodies go whole, with their content-length.
 */
import type { JsonObject } from "../core/types.ts";

/** Bodies up to this size (bytes, or the client's body size for a JSON body) are sent whole. */
export const STREAM_BODY_ABOVE = 1024 * 1024;

/** The size of each slice of a streamed body, in bytes or characters. */
const SLICE = 64 * 1024;

const encoder = new TextEncoder();

/** Where a slice of `text` from `at` may end: never between the halves of a surrogate pair. */
function sliceEnd(text: string, at: number): number {
  const end = Math.min(text.length, at + SLICE);
  const last = text.charCodeAt(end - 1);
  return end < text.length && last >= 0xd800 && last <= 0xdbff ? end - 1 : end;
}

/** JSON text of `value` exactly as JSON.stringify writes it, in pieces; long strings come in slices. */
export function* jsonPieces(value: unknown): Generator<string> {
  if (typeof value === "string") {
    if (value.length <= SLICE) return yield JSON.stringify(value);
    yield '"';
    for (let at = 0; at < value.length;) {
      const end = sliceEnd(value, at);
      yield JSON.stringify(value.slice(at, end)).slice(1, -1);
      at = end;
    }
    return yield '"';
  }
  if (typeof value !== "object" || value === null) return yield JSON.stringify(value) ?? "null";
  const skipped = (item: unknown) => item === undefined || typeof item === "function" || typeof item === "symbol";
  if (Array.isArray(value)) {
    yield "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ",";
      if (skipped(value[i])) yield "null";
      else yield* jsonPieces(value[i]);
    }
    return yield "]";
  }
  let first = true;
  yield "{";
  for (const [key, item] of Object.entries(value)) {
    if (skipped(item)) continue;
    yield `${first ? "" : ","}${JSON.stringify(key)}:`;
    first = false;
    yield* jsonPieces(item);
  }
  yield "}";
}

/** A stream that pulls text from `pieces`, about a slice at a time, and sends it as UTF-8. */
function textStream(pieces: Iterator<string>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      let text = "";
      while (text.length < SLICE) {
        const next = pieces.next();
        if (next.done) break;
        text += next.value;
      }
      if (text === "") return controller.close();
      controller.enqueue(encoder.encode(text));
    },
  });
}

/**
 * `body` as fetch should take it: bytes or JSON text whole when small; else a stream that holds no copy of it.
 * `size` is the client's body size, which tells a large JSON body before it is serialized.
 */
export function uploadBody(body: Uint8Array<ArrayBuffer> | JsonObject, size: number): BodyInit {
  if (!(body instanceof Uint8Array)) {
    return size <= STREAM_BODY_ABOVE ? JSON.stringify(body) : textStream(jsonPieces(body));
  }
  if (body.length <= STREAM_BODY_ABOVE) return body;
  let at = 0;
  // A default (not byte) stream: its chunks are views of the body, never transferred away from it.
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= body.length) return controller.close();
      const end = Math.min(body.length, at + SLICE);
      controller.enqueue(body.subarray(at, end));
      at = end;
    },
  });
}

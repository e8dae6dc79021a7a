/**
 * @module A request body on its way upstream. Given a byte array or a string, the runtime's fetch makes several
 * copies of it before it goes out, which for a body of many megabytes (a long context, images) multiplies the
 * process's memory; a large body is handed over as a stream of slices instead, so it is held once. Small bodies go
 * as they are, with their content-length.
 */

/** Bodies up to this size (bytes, or characters of JSON text) are sent whole. */
export const STREAM_BODY_ABOVE = 1024 * 1024;

/** The size of each slice of a streamed body. */
const SLICE = 64 * 1024;

const encoder = new TextEncoder();

/** `body` as fetch should take it: as it is when small, else a stream of slices that copies nothing ahead. */
export function uploadBody(body: Uint8Array<ArrayBuffer> | string): BodyInit {
  if (body.length <= STREAM_BODY_ABOVE) return body;
  let at = 0;
  // A default (not byte) stream: its chunks are views of the body, never transferred away from it.
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= body.length) return controller.close();
      let end = Math.min(body.length, at + SLICE);
      if (typeof body === "string") {
        // A slice never ends between the halves of a surrogate pair, which would encode as two U+FFFD.
        const last = body.charCodeAt(end - 1);
        if (end < body.length && last >= 0xd800 && last <= 0xdbff) end--;
        controller.enqueue(encoder.encode(body.slice(at, end)));
      } else controller.enqueue(body.subarray(at, end));
      at = end;
    },
  });
}

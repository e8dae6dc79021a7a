/**
 * @module Reading an upstream body into buffers the gateway owns. Deno's fetch hands out every chunk of a
 * default reader as a view over a fresh 64 KiB buffer; an SSE event is a few hundred bytes, so a stream of a
 * dozen events would allocate and zero most of a megabyte and keep the allocator fragmented under load. A BYOB
 * reader fills one reused buffer instead, and each chunk is copied out at its own size. The buffer starts small,
 * since an open stream holds it while it waits for its next event, and doubles when a read fills it.
 */

/** What the relay needs of an upstream body: owned chunks, and a way to give up on the rest. */
export interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/** First and largest size of the reused read buffer; a larger chunk simply arrives in several reads. */
const FIRST_BUFFER_BYTES = 2 * 1024;
const MAX_BUFFER_BYTES = 64 * 1024;

/** A reader over `body` whose chunks are exact-size copies, through one reused buffer when the body allows it. */
export function chunkReader(body: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream (a body made in JS): its chunks are already the producer's own.
    return body.getReader();
  }
  let buffer = new Uint8Array(FIRST_BUFFER_BYTES);
  return {
    async read() {
      const result = await byob.read(buffer);
      if (result.done) return { done: true, value: undefined };
      const { value } = result;
      // A full buffer says the upstream sends more at once than it holds: the next read gets twice the room, and
      // the full one is handed out as it is.
      if (value.byteLength === value.buffer.byteLength && value.byteLength < MAX_BUFFER_BYTES) {
        buffer = new Uint8Array(value.byteLength * 2);
        return { done: false, value };
      }
      buffer = new Uint8Array(value.buffer);
      return { done: false, value: value.slice() };
    },
    cancel: (reason) => byob.cancel(reason),
  };
}

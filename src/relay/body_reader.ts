/**
 * @module Reading an upstream body into buffers the gateway owns. Deno's fetch hands out every chunk of a
 * default reader as a view over a fresh 64 KiB buffer; an SSE event is a few hundred bytes, so a stream of a
 * dozen events would allocate and zero most of a megabyte and keep the allocator fragmented under load. A BYOB
 * reader fills one reused buffer instead, and each chunk is copied out at its own size.
 */

/** What the relay needs of an upstream body: owned chunks, and a way to give up on the rest. */
export interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/** Size of the reused read buffer; a larger chunk simply arrives in several reads. */
const READ_BUFFER_BYTES = 16 * 1024;

/** A reader over `body` whose chunks are exact-size copies, through one reused buffer when the body allows it. */
export function chunkReader(body: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream (a body made in JS): its chunks are already the producer's own.
    return body.getReader();
  }
  let buffer = new Uint8Array(READ_BUFFER_BYTES);
  return {
    async read() {
      const result = await byob.read(buffer);
      if (result.value) buffer = new Uint8Array(result.value.buffer);
      if (result.done) return { done: true, value: undefined };
      return { done: false, value: result.value.slice() };
    },
    cancel: (reason) => byob.cancel(reason),
  };
}

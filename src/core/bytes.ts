/** @module Joining byte chunks into one array, for the modules that collect bytes piece by piece. */

/** `chunks` in one array of `size` bytes (their total length unless given). */
export function joined(chunks: readonly Uint8Array[], size?: number): Uint8Array<ArrayBuffer> {
  if (size === undefined) {
    size = 0;
    for (const chunk of chunks) size += chunk.byteLength;
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

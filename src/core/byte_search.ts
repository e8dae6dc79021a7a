/**
 * @module Finding short ASCII markers in bytes without decoding them, by Horspool's search: each marker keeps a
 * table of how far the window may skip for the byte under its last position, so most bytes are never compared.
 */

/** A marker ready to be searched for. */
export interface ByteMarker {
  bytes: Uint8Array;
  /** How far the window moves when the byte under its last position is this one. */
  skip: Uint8Array;
}

/** Prepares `text` (ASCII, 1 to 255 characters) for {@linkcode hasMarker}. */
export function byteMarker(text: string): ByteMarker {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length === 0 || bytes.length > 255 || bytes.length !== text.length) {
    throw new RangeError(`Cannot search for "${text}": a marker is 1 to 255 ASCII characters`);
  }
  const skip = new Uint8Array(256).fill(bytes.length);
  for (let i = 0; i < bytes.length - 1; i++) skip[bytes[i]] = bytes.length - 1 - i;
  return { bytes, skip };
}

/** Whether `marker` occurs in `haystack` before index `end`. */
export function hasMarker(haystack: Uint8Array, marker: ByteMarker, end = haystack.length): boolean {
  const { bytes, skip } = marker;
  const last = bytes.length - 1;
  const lastByte = bytes[last];
  for (let i = last; i < end; i += skip[haystack[i]]) {
    if (haystack[i] !== lastByte) continue;
    let j = last - 1;
    while (j >= 0 && haystack[i - last + j] === bytes[j]) j--;
    if (j < 0) return true;
  }
  return false;
}

/** Whether any of `markers` occurs in `haystack` before index `end`. */
export function hasAnyMarker(haystack: Uint8Array, markers: readonly ByteMarker[], end = haystack.length): boolean {
  for (const marker of markers) if (hasMarker(haystack, marker, end)) return true;
  return false;
}

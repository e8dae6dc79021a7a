/**
 * @module Finding markers and other byte patterns in bytes without decoding them, by Horspool's search: each keeps a
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
  return bytePattern(bytes);
}

/**
 * Prepares any non-empty bytes for {@linkcode indexOfMarker}. A skip past 255 is stored as 255: a shorter move than
 * the table allows only costs a few more comparisons, never a missed match.
 */
export function bytePattern(bytes: Uint8Array): ByteMarker {
  if (bytes.length === 0) throw new RangeError("Cannot search for nothing: a pattern has at least one byte");
  const skip = new Uint8Array(256).fill(Math.min(bytes.length, 255));
  for (let i = 0; i < bytes.length - 1; i++) skip[bytes[i]] = Math.min(bytes.length - 1 - i, 255);
  return { bytes, skip };
}

/** Where `marker` first occurs in `haystack` at or after `from` and before `end`, or -1. */
export function indexOfMarker(haystack: Uint8Array, marker: ByteMarker, from = 0, end = haystack.length): number {
  const { bytes, skip } = marker;
  const last = bytes.length - 1;
  const lastByte = bytes[last];
  for (let i = from + last; i < end; i += skip[haystack[i]]) {
    if (haystack[i] !== lastByte) continue;
    let j = last - 1;
    while (j >= 0 && haystack[i - last + j] === bytes[j]) j--;
    if (j < 0) return i - last;
  }
  return -1;
}

/** Whether `marker` occurs in `haystack` before index `end`. */
export function hasMarker(haystack: Uint8Array, marker: ByteMarker, end = haystack.length): boolean {
  return indexOfMarker(haystack, marker, 0, end) !== -1;
}

/**
 * Several markers searched for in one pass (Horspool's search over the markers' first `width` bytes, `width` being
 * the shortest marker's length): a stream's watch looks at every byte it relays, and one pass over them costs a
 * fraction of one search per marker.
 */
export interface MarkerSet {
  markers: readonly ByteMarker[];
  width: number;
  /** How far the window moves when the byte under its last position is this one. */
  skip: Uint8Array;
  /** The markers whose byte at `width - 1` is this one: the only ones a window ending in it can begin. */
  ending: (ByteMarker[] | undefined)[];
}

/** Prepares `markers` (at least one) for {@linkcode hasAnyMarker}. */
export function markerSet(markers: readonly ByteMarker[]): MarkerSet {
  if (markers.length === 0) throw new RangeError("Cannot search for no markers: a set has at least one");
  const width = Math.min(...markers.map((marker) => marker.bytes.length));
  const skip = new Uint8Array(256).fill(width);
  const ending = new Array<ByteMarker[] | undefined>(256).fill(undefined);
  for (const { bytes } of markers) {
    for (let i = 0; i < width - 1; i++) skip[bytes[i]] = Math.min(skip[bytes[i]], width - 1 - i);
  }
  for (const marker of markers) (ending[marker.bytes[width - 1]] ??= []).push(marker);
  return { markers, width, skip, ending };
}

/** Whether any marker of `set` occurs in `haystack` before index `end`. */
export function hasAnyMarker(haystack: Uint8Array, set: MarkerSet, end = haystack.length): boolean {
  const { width, skip, ending } = set;
  for (let i = width - 1; i < end; i += skip[haystack[i]]) {
    const candidates = ending[haystack[i]];
    if (candidates === undefined) continue;
    const start = i - width + 1;
    for (const { bytes } of candidates) {
      if (start + bytes.length > end) continue;
      let j = 0;
      while (j < bytes.length && haystack[start + j] === bytes[j]) j++;
      if (j === bytes.length) return true;
    }
  }
  return false;
}

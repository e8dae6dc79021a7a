/**
 * @module AWS event-stream framing (`application/vnd.amazon.eventstream`): frames of a 12-byte prelude (total
 * length, headers length, CRC32 of those 8 bytes), typed headers, a payload and a CRC32 of all before it.
 * The decoder takes bytes in any chunking and throws a SyntaxError for a frame whose checksums or lengths do not
 * hold.
 */

/** A header value as the frame types it: booleans, integers, bytes, strings, timestamps (ms) or UUIDs (hex). */
export type HeaderValue = boolean | number | bigint | string | Uint8Array;

/** One decoded frame. */
export interface EventStreamMessage {
  headers: Record<string, HeaderValue>;
  payload: Uint8Array;
}

const PRELUDE_BYTES = 12;
const CRC_BYTES = 4;
/** The format's own ceiling for one frame; anything larger is corruption, not data. */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;
const MAX_HEADERS_BYTES = 128 * 1024;
const STRING_TYPE = 7;

/** CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), the checksum of the prelude and the frame. */
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** The CRC-32 of `bytes`. */
export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

/** Byte sizes of the fixed-size header types (byte, short, int, long, timestamp, UUID). */
const FIXED_SIZES: Record<number, number> = { 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16 };

/** The value of a fixed-size header at `at`. */
function fixedValue(view: DataView, bytes: Uint8Array, type: number, at: number): HeaderValue {
  switch (type) {
    case 2:
      return view.getInt8(at);
    case 3:
      return view.getInt16(at);
    case 4:
      return view.getInt32(at);
    case 5:
      return view.getBigInt64(at);
    case 8:
      return Number(view.getBigInt64(at));
    default:
      return bytes.subarray(at, at + 16).toHex();
  }
}

function readHeaders(view: DataView, bytes: Uint8Array, start: number, end: number): EventStreamMessage["headers"] {
  const headers: EventStreamMessage["headers"] = {};
  let at = start;
  const take = (n: number) => {
    if (at + n > end) throw new SyntaxError("Cannot decode event-stream frame: a header runs past its section");
    at += n;
    return at - n;
  };
  while (at < end) {
    const nameLength = bytes[take(1)];
    const nameAt = take(nameLength);
    const name = utf8.decode(bytes.subarray(nameAt, nameAt + nameLength));
    const type = bytes[take(1)];
    if (type === 0 || type === 1) headers[name] = type === 0;
    else if (type === 6 || type === STRING_TYPE) {
      const length = view.getUint16(take(2));
      const valueAt = take(length);
      const raw = bytes.slice(valueAt, valueAt + length);
      headers[name] = type === STRING_TYPE ? utf8.decode(raw) : raw;
    } else if (type in FIXED_SIZES) headers[name] = fixedValue(view, bytes, type, take(FIXED_SIZES[type]));
    else throw new SyntaxError(`Cannot decode event-stream frame: header "${name}" has unknown type ${type}`);
  }
  return headers;
}

/** Decodes one whole frame (exactly `frame.length` bytes), checking both checksums. */
export function decodeFrame(frame: Uint8Array): EventStreamMessage {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  const total = view.getUint32(0);
  const headersLength = view.getUint32(4);
  if (total !== frame.length) throw new SyntaxError("Cannot decode event-stream frame: its length is wrong");
  if (crc32(frame.subarray(0, 8)) !== view.getUint32(8)) {
    throw new SyntaxError("Cannot decode event-stream frame: the prelude checksum does not match");
  }
  if (crc32(frame.subarray(0, total - CRC_BYTES)) !== view.getUint32(total - CRC_BYTES)) {
    throw new SyntaxError("Cannot decode event-stream frame: the frame checksum does not match");
  }
  const headersEnd = PRELUDE_BYTES + headersLength;
  return {
    headers: readHeaders(view, frame, PRELUDE_BYTES, headersEnd),
    payload: frame.slice(headersEnd, total - CRC_BYTES),
  };
}

/** A decoder fed chunks as they arrive; `push` returns the frames completed so far, `end` refuses a partial one. */
export function eventStreamDecoder(): { push(chunk: Uint8Array): EventStreamMessage[]; end(): void } {
  let buffer: Uint8Array = new Uint8Array(0);
  return {
    push(chunk) {
      if (buffer.length === 0) buffer = chunk;
      else {
        const joined = new Uint8Array(buffer.length + chunk.length);
        joined.set(buffer);
        joined.set(chunk, buffer.length);
        buffer = joined;
      }
      const out: EventStreamMessage[] = [];
      while (buffer.length >= PRELUDE_BYTES) {
        const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
        const total = view.getUint32(0);
        const headersLength = view.getUint32(4);
        // Checked before waiting for the rest, so a corrupt length cannot make the decoder buffer gigabytes.
        if (crc32(buffer.subarray(0, 8)) !== view.getUint32(8)) {
          throw new SyntaxError("Cannot decode event-stream frame: the prelude checksum does not match");
        }
        if (
          total > MAX_FRAME_BYTES || headersLength > MAX_HEADERS_BYTES ||
          total < PRELUDE_BYTES + headersLength + CRC_BYTES
        ) {
          throw new SyntaxError("Cannot decode event-stream frame: its lengths are impossible");
        }
        if (buffer.length < total) break;
        out.push(decodeFrame(buffer.subarray(0, total)));
        buffer = buffer.subarray(total);
      }
      return out;
    },
    end() {
      if (buffer.length > 0) throw new SyntaxError("Cannot decode event-stream: it ended inside a frame");
    },
  };
}

/** Encodes one frame with string headers, as AWS services send them. */
export function encodeFrame(headers: Record<string, string>, payload: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const nameBytes = encoder.encode(name);
    const valueBytes = encoder.encode(value);
    const part = new Uint8Array(1 + nameBytes.length + 1 + 2 + valueBytes.length);
    part[0] = nameBytes.length;
    part.set(nameBytes, 1);
    part[1 + nameBytes.length] = STRING_TYPE;
    new DataView(part.buffer).setUint16(2 + nameBytes.length, valueBytes.length);
    part.set(valueBytes, 4 + nameBytes.length);
    parts.push(part);
  }
  const headersLength = parts.reduce((sum, part) => sum + part.length, 0);
  const total = PRELUDE_BYTES + headersLength + payload.length + CRC_BYTES;
  const frame = new Uint8Array(total);
  const view = new DataView(frame.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headersLength);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  let at = PRELUDE_BYTES;
  for (const part of parts) {
    frame.set(part, at);
    at += part.length;
  }
  frame.set(payload, at);
  view.setUint32(total - CRC_BYTES, crc32(frame.subarray(0, total - CRC_BYTES)));
  return frame;
}

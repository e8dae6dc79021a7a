/**
 * @module A WebSocket client by hand over a loopback TCP connection, for what no WebSocket client does: send frames
 * without ever reading (a client that stops reading), send many frames in one write, and read the server's frames one
 * by one (its close code included). Used by the socket flood bench and the socket tests.
 */

const encoder = new TextEncoder();

/** The opcodes (RFC 6455 section 5.2) the client sends, and looks for among the server's frames. */
export const OPCODE = { text: 1, close: 8 } as const;

/**
 * One whole text message as a client frame (masked, as a client must; the mask is zeros, which leaves the payload as
 * it is and costs the sender nothing).
 */
export function clientFrame(payload: Uint8Array | string): Uint8Array {
  const body = typeof payload === "string" ? encoder.encode(payload) : payload;
  const length = body.byteLength;
  const extended = length < 126 ? 0 : length < 65536 ? 2 : 8;
  const frame = new Uint8Array(2 + extended + 4 + length);
  frame[0] = 0x80 | OPCODE.text;
  frame[1] = 0x80 | (extended === 0 ? length : extended === 2 ? 126 : 127);
  const view = new DataView(frame.buffer);
  if (extended === 2) view.setUint16(2, length);
  if (extended === 8) view.setBigUint64(2, BigInt(length));
  frame.set(body, 2 + extended + 4);
  return frame;
}

/** The head of a frame: how long it is and where its payload starts, once enough bytes are there. */
function frameHead(bytes: Uint8Array): { opcode: number; start: number; length: number } | undefined {
  if (bytes.length < 2) return undefined;
  const short = bytes[1] & 0x7f;
  const start = short < 126 ? 2 : short === 126 ? 4 : 10;
  if (bytes.length < start) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = short < 126 ? short : short === 126 ? view.getUint16(2) : Number(view.getBigUint64(2));
  return { opcode: bytes[0] & 0x0f, start, length };
}

/** A server frame as read: its opcode and payload. */
export interface ServerFrame {
  opcode: number;
  payload: Uint8Array;
}

/** An open socket over a raw connection: write frames, and read the server's when the caller wants to. */
export interface RawSocket {
  /** Writes bytes (frames), whole; rejects once the server has gone. */
  write(bytes: Uint8Array): Promise<void>;
  /** The server's next frame; undefined once the connection has ended. */
  next(): Promise<ServerFrame | undefined>;
  close(): void;
}

/** The bytes of a handshake for `GET /v1/responses` on `hostname:port`, with `headers` (the token). */
export function handshakeBytes(hostname: string, port: string, headers: Record<string, string>): Uint8Array {
  const lines = [
    "GET /v1/responses HTTP/1.1",
    `host: ${hostname}:${port}`,
    "upgrade: websocket",
    "connection: Upgrade",
    "sec-websocket-version: 13",
    "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return encoder.encode(`${lines.join("\r\n")}\r\n\r\n`);
}

/** Opens `ws://.../v1/responses` with `headers` by hand; throws with the answer when it is not a 101. */
export async function openRawSocket(baseUrl: string, headers: Record<string, string>): Promise<RawSocket> {
  const { hostname, port } = new URL(baseUrl);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  await conn.write(handshakeBytes(hostname, port, headers));
  // Bytes read and not taken yet: `buffered` from `offset` on.
  let buffered = new Uint8Array(0);
  let offset = 0;
  const chunk = new Uint8Array(65536);
  const more = async (): Promise<boolean> => {
    const n = await conn.read(chunk).catch(() => null);
    if (n === null) return false;
    const joined = new Uint8Array(buffered.length - offset + n);
    joined.set(buffered.subarray(offset));
    joined.set(chunk.subarray(0, n), buffered.length - offset);
    buffered = joined;
    offset = 0;
    return true;
  };
  for (;;) {
    const text = new TextDecoder().decode(buffered);
    const end = text.indexOf("\r\n\r\n");
    if (end !== -1) {
      if (!text.startsWith("HTTP/1.1 101")) {
        conn.close();
        throw new Error(`The handshake was refused: ${text.slice(0, 300)}`);
      }
      offset = new TextEncoder().encode(text.slice(0, end + 4)).length;
      break;
    }
    if (!await more()) throw new Error("The connection ended during the handshake");
  }
  return {
    async write(bytes) {
      for (let done = 0; done < bytes.length;) done += await conn.write(bytes.subarray(done));
    },
    async next() {
      for (;;) {
        const head = frameHead(buffered.subarray(offset));
        if (head && buffered.length - offset >= head.start + head.length) {
          const payload = buffered.slice(offset + head.start, offset + head.start + head.length);
          offset += head.start + head.length;
          return { opcode: head.opcode, payload };
        }
        if (!await more()) return undefined;
      }
    },
    close() {
      try {
        conn.close();
      } catch {
        // Closed already.
      }
    },
  };
}

/** The code and reason of a close frame's payload (1005 when it has none, as RFC 6455 says). */
export function closeOf(frame: ServerFrame): { code: number; reason: string } {
  if (frame.payload.length < 2) return { code: 1005, reason: "" };
  const code = (frame.payload[0] << 8) | frame.payload[1];
  return { code, reason: new TextDecoder().decode(frame.payload.subarray(2)) };
}

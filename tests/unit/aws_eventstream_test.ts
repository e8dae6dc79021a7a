/** @module Event-stream framing against known frames from AWS's own event-stream library tests, and corruption. */
import assert from "node:assert/strict";
import { crc32, decodeFrame, encodeFrame, eventStreamDecoder } from "../../src/providers/aws_eventstream.ts";

const encoder = new TextEncoder();
const PAYLOAD = "{'foo':'bar'}";

/** Known frames: AWS's event-stream library tests decode these bytes (and their CRCs) as named. */
const KNOWN: { name: string; bytes: number[]; headers: Record<string, string>; payload: string }[] = [
  {
    name: "an empty frame",
    bytes: [0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff],
    headers: {},
    payload: "",
  },
  {
    name: "a payload without headers",
    bytes: [
      0x00,
      0x00,
      0x00,
      0x1d,
      0x00,
      0x00,
      0x00,
      0x00,
      0xfd,
      0x52,
      0x8c,
      0x5a,
      ...encoder.encode(PAYLOAD),
      0xc3,
      0x65,
      0x39,
      0x36,
    ],
    headers: {},
    payload: PAYLOAD,
  },
  {
    name: "a payload with one string header",
    bytes: [
      ...[0x00, 0x00, 0x00, 0x3d, 0x00, 0x00, 0x00, 0x20, 0x07, 0xfd, 0x83, 0x96, 0x0c],
      ...encoder.encode("content-type"),
      ...[0x07, 0x00, 0x10],
      ...encoder.encode("application/json"),
      ...encoder.encode(PAYLOAD),
      ...[0x8d, 0x9c, 0x08, 0xb1],
    ],
    headers: { "content-type": "application/json" },
    payload: PAYLOAD,
  },
];

for (const known of KNOWN) {
  Deno.test(`decodeFrame() reads the known frame with ${known.name}`, () => {
    const message = decodeFrame(new Uint8Array(known.bytes));
    assert.deepEqual(message.headers, known.headers);
    assert.equal(new TextDecoder().decode(message.payload), known.payload);
  });
  Deno.test(`encodeFrame() writes the known frame with ${known.name} byte for byte`, () => {
    assert.deepEqual([...encodeFrame(known.headers, encoder.encode(known.payload))], known.bytes);
  });
}

Deno.test("crc32() gives the standard check value for '123456789'", () => {
  assert.equal(crc32(encoder.encode("123456789")), 0xcbf43926);
});

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Three frames as Bedrock sends them, back to back. */
function threeFrames(): Uint8Array {
  const frames = ["one", "two ✓ multi-byte", "three"].map((text) =>
    encodeFrame(
      { ":message-type": "event", ":event-type": "chunk", ":content-type": "application/json" },
      encoder.encode(JSON.stringify({ bytes: encoder.encode(text).toBase64() })),
    )
  );
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const frame of frames) {
    all.set(frame, at);
    at += frame.length;
  }
  return all;
}

for (const size of [1, 2, 7, 1 << 20]) {
  Deno.test(`eventStreamDecoder() gives the same frames when bytes arrive ${size} at a time`, () => {
    const bytes = threeFrames();
    const decoder = eventStreamDecoder();
    const messages = [];
    for (let at = 0; at < bytes.length; at += size) messages.push(...decoder.push(bytes.slice(at, at + size)));
    decoder.end();
    assert.deepEqual(messages.map((m) => text(Uint8Array.fromBase64(JSON.parse(text(m.payload)).bytes))), [
      "one",
      "two ✓ multi-byte",
      "three",
    ]);
    assert.equal(messages[1].headers[":event-type"], "chunk");
  });
}

Deno.test("eventStreamDecoder() refuses a frame whose payload was changed in transit", () => {
  const bytes = threeFrames();
  bytes[30] ^= 0x01; // inside the first frame's headers or payload, after the prelude
  assert.throws(() => eventStreamDecoder().push(bytes), { name: "SyntaxError", message: /frame checksum/ });
});

Deno.test("eventStreamDecoder() refuses a frame whose prelude was changed, before waiting for its length", () => {
  const bytes = threeFrames();
  bytes[2] ^= 0x40; // the total length: a corrupt one must not make the decoder wait for megabytes
  assert.throws(() => eventStreamDecoder().push(bytes.slice(0, 12)), { message: /prelude checksum/ });
});

Deno.test("eventStreamDecoder() refuses a prelude with a valid checksum but impossible lengths", () => {
  const prelude = new Uint8Array(12);
  const view = new DataView(prelude.buffer);
  view.setUint32(0, 16);
  view.setUint32(4, 100); // headers longer than the whole frame
  view.setUint32(8, crc32(prelude.subarray(0, 8)));
  assert.throws(() => eventStreamDecoder().push(prelude), { message: /impossible/ });
});

Deno.test("eventStreamDecoder() end() refuses a stream cut inside a frame", () => {
  const bytes = threeFrames();
  const decoder = eventStreamDecoder();
  assert.equal(decoder.push(bytes.slice(0, bytes.length - 5)).length, 2);
  assert.throws(() => decoder.end(), { message: /ended inside a frame/ });
});

Deno.test("decodeFrame() reads every header type", () => {
  const headers = [
    [0x01, 0x61, 0x00], // a: true
    [0x01, 0x62, 0x01], // b: false
    [0x01, 0x63, 0x02, 0xff], // c: byte -1
    [0x01, 0x64, 0x03, 0x01, 0x00], // d: short 256
    [0x01, 0x65, 0x04, 0x00, 0x01, 0x00, 0x00], // e: int 65536
    [0x01, 0x66, 0x05, 0, 0, 0, 0, 0, 0, 0, 0x2a], // f: long 42n
    [0x01, 0x67, 0x06, 0x00, 0x02, 0xde, 0xad], // g: bytes
    [0x01, 0x68, 0x08, 0, 0, 0x01, 0x80, 0x00, 0x00, 0x00, 0x00], // h: timestamp (ms)
    [0x01, 0x69, 0x09, ...Array.from({ length: 16 }, (_, i) => i)], // i: uuid
  ].flat();
  const total = 12 + headers.length + 4;
  const frame = new Uint8Array(total);
  const view = new DataView(frame.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headers.length);
  view.setUint32(8, crc32(frame.subarray(0, 8)));
  frame.set(headers, 12);
  view.setUint32(total - 4, crc32(frame.subarray(0, total - 4)));
  assert.deepEqual(decodeFrame(frame).headers, {
    a: true,
    b: false,
    c: -1,
    d: 256,
    e: 65536,
    f: 42n,
    g: new Uint8Array([0xde, 0xad]),
    h: 0x0180_0000_0000,
    i: "000102030405060708090a0b0c0d0e0f",
  });
});

/** @module The upstream body reader: exact-size owned chunks through a reused buffer, and the fallback. */
import assert from "node:assert/strict";
import { chunkReader } from "../../src/relay/body_reader.ts";
import { READ_DEADLINE_MS, within } from "../_reads.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A byte stream, as Deno's fetch gives, that enqueues the given texts one by one. */
function byteStream(texts: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    type: "bytes",
    start(controller) {
      for (const text of texts) controller.enqueue(encoder.encode(text));
      controller.close();
    },
  });
}

async function readAll(reader: { read(): Promise<ReadableStreamReadResult<Uint8Array>> }): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

Deno.test("chunkReader: byte stream chunks are exact-size copies that later reads do not overwrite", async () => {
  const texts = ["event: ping\ndata: {}\n\n", "data: second\n\n", "x".repeat(40_000)];
  const reader = chunkReader(byteStream(texts));
  const chunks: Uint8Array[] = [];
  const seenAtRead: string[] = [];
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    chunks.push(read.value);
    seenAtRead.push(decoder.decode(read.value));
  }
  // Queued chunks may arrive together; nothing is lost or reordered, a chunk larger than the buffer included.
  assert.equal(seenAtRead.join(""), texts.join(""));
  assert.ok(chunks.length >= 3, "the 40,000-byte chunk takes several reads of the reused buffer");
  // The buffer starts small and doubles whenever a read fills it, so a large chunk takes a few reads, not dozens.
  assert.ok(chunks.length <= 8, `${chunks.length} reads`);
  // The reused buffer never shows through: every chunk still reads as it did when it was handed out.
  assert.deepEqual(chunks.map((c) => decoder.decode(c)), seenAtRead);
  for (const chunk of chunks) assert.equal(chunk.buffer.byteLength, chunk.byteLength, "a chunk owns its own buffer");
});

Deno.test("chunkReader: a fetch body is read without a 64 KiB buffer per chunk", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(encoder.encode("data: a\n\n"));
          controller.enqueue(encoder.encode("data: b\n\n"));
          controller.close();
        },
      }),
    ));
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/`);
    const reader = chunkReader(res.body!);
    const chunks = await within(readAll(reader), READ_DEADLINE_MS, "the whole body").finally(() => reader.cancel());
    assert.equal(chunks.map((c) => decoder.decode(c)).join(""), "data: a\n\ndata: b\n\n");
    for (const chunk of chunks) assert.equal(chunk.buffer.byteLength, chunk.byteLength);
  } finally {
    await server.shutdown();
  }
});

Deno.test("chunkReader: a stream that is not a byte stream is read as it is", async () => {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode("one"));
      controller.enqueue(encoder.encode("two"));
      controller.close();
    },
  });
  const chunks = await readAll(chunkReader(body));
  assert.deepEqual(chunks.map((c) => decoder.decode(c)), ["one", "two"]);
});

Deno.test("chunkReader: cancel reaches the body", async () => {
  let cancelled: unknown;
  const body = new ReadableStream<Uint8Array>({
    type: "bytes",
    pull(controller) {
      controller.enqueue(encoder.encode("more"));
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  const reader = chunkReader(body);
  assert.equal(decoder.decode((await reader.read()).value!), "more");
  await reader.cancel("client left");
  assert.equal(cancelled, "client left");
});

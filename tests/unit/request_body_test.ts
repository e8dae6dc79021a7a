/** @module readJsonBody(), createBodyBudget() and uploadBody(): bodies read once, within a budget, sent in slices. */
import assert from "node:assert/strict";
import { createBodyBudget, SMALL_BODY_BYTES } from "../../src/core/body_budget.ts";
import { GatewayError } from "../../src/core/errors.ts";
import { readBodyBytes, readJsonBody } from "../../src/core/request_body.ts";
import { jsonPieces, STREAM_BODY_ABOVE, uploadBody } from "../../src/providers/upload.ts";

const encoder = new TextEncoder();

/** A request whose body arrives as these chunks, with no content-length; `stall` leaves it open after them. */
function chunked(chunks: string[], stall = false): Request {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      if (!stall) controller.close();
    },
  });
  return new Request("http://gateway.test/v1/messages", { method: "POST", body });
}

const options = { maxBytes: 1000, idleMs: 1000 };

Deno.test("readJsonBody() joins a body sent without a length and drops a byte-order mark", async () => {
  const { value, bytes } = await readJsonBody(chunked(['\ufeff{"a":', "1}"]), options);
  assert.deepEqual(value, { a: 1 });
  assert.equal(new TextDecoder().decode(bytes), '{"a":1}');
});

Deno.test("readBodyBytes() refuses a body without a length as soon as it passes the limit", async () => {
  const err = await readBodyBytes(chunked(["x".repeat(600), "x".repeat(600)], true), options).catch((e) => e);
  assert.ok(err instanceof GatewayError);
  assert.deepEqual([err.kind, err.status], ["request_too_large", 413]);
});

Deno.test("readBodyBytes() answers 408 with the connection closed when the body stops arriving", async () => {
  const err = await readBodyBytes(chunked(['{"a":'], true), { ...options, idleMs: 20 }).catch((e) => e);
  assert.ok(err instanceof GatewayError);
  assert.deepEqual([err.kind, err.status, err.headers.get("connection")], ["request_timeout", 408, "close"]);
});

Deno.test("readBodyBytes() reads a body of declared length into one buffer of that size", async () => {
  const req = new Request("http://gateway.test/", {
    method: "POST",
    headers: { "content-length": "300" },
    body: chunked(["x".repeat(100), "x".repeat(200)]).body,
  });
  const bytes = await readBodyBytes(req, options);
  assert.equal(bytes.byteLength, 300);
  assert.equal(bytes.buffer.byteLength, 300);
  const err = await readBodyBytes(
    new Request(req.url, { method: "POST", headers: { "content-length": "-1" } }),
    options,
  )
    .catch((e) => e);
  assert.deepEqual([err.status, err.param], [400, "content-length"]);
});

function budget(
  maxBytes: number,
  sleep: (ms: number, signal: AbortSignal) => Promise<boolean> = () => Promise.resolve(true),
) {
  return createBodyBudget(maxBytes, { waitMs: 1000, sleep, now: () => 0 });
}

Deno.test("createBodyBudget() lets small bodies and a body alone in, and turns away one that does not fit", async () => {
  const b = budget(100_000);
  const alone = b.hold();
  await alone.grow(150_000);
  const small = b.hold();
  await small.grow(SMALL_BODY_BYTES);
  const large = b.hold();
  const err = await large.grow(90_000).catch((e) => e);
  assert.ok(err instanceof GatewayError);
  assert.deepEqual([err.status, err.headers.get("retry-after")], [503, "1"]);
  assert.equal(b.inFlight(), 150_000 + SMALL_BODY_BYTES);
  alone.release();
  alone.release();
  small.release();
  assert.equal(b.inFlight(), 0);
  await large.grow(90_000);
  assert.equal(b.inFlight(), 90_000);
});

Deno.test("createBodyBudget() wakes a waiting body when another is released", async () => {
  const b = budget(
    100_000,
    (_ms: number, signal: AbortSignal) =>
      new Promise<boolean>((resolve) => signal.addEventListener("abort", () => resolve(false), { once: true })),
  );
  const first = b.hold();
  await first.grow(80_000);
  const second = b.hold();
  const waiting = second.grow(80_000);
  first.release();
  await waiting;
  assert.equal(b.inFlight(), 80_000);
});

Deno.test("createBodyBudget().tryHold() takes bytes already received at once when they fit, and never waits", () => {
  const b = budget(100_000, () => Promise.reject(new Error("waited")));
  const alone = b.tryHold(150_000);
  assert.ok(alone, "bytes alone are always let in");
  assert.ok(b.tryHold(SMALL_BODY_BYTES), "small ones too");
  assert.equal(b.tryHold(90_000), undefined);
  assert.equal(b.inFlight(), 150_000 + SMALL_BODY_BYTES);
  alone.release();
  assert.ok(b.tryHold(30_000));
});

async function drained(body: BodyInit): Promise<string> {
  return await new Response(body).text();
}

Deno.test("uploadBody() sends small bodies whole and large bytes as slices that add up to the same bytes", async () => {
  const small = encoder.encode("{}");
  assert.equal(uploadBody(small, 2), small);
  assert.equal(uploadBody({ a: 1 }, 7), '{"a":1}');
  const bytes = encoder.encode("y".repeat(STREAM_BODY_ABOVE + 10));
  const sliced = uploadBody(bytes, bytes.length);
  assert.ok(sliced instanceof ReadableStream);
  assert.equal(await drained(sliced), "y".repeat(STREAM_BODY_ABOVE + 10));
});

const TREES: { name: string; value: unknown }[] = [
  { name: "nested objects and arrays", value: { a: [1, "two", { b: null, c: true }], d: {}, e: [], f: -0 } },
  { name: "values JSON.stringify leaves out", value: { a: undefined, b: [undefined, () => 1], c: NaN } },
  { name: "escapes", value: { 'quo"te': 'line\nbreak "quoted" \u0001 \ud800 lone' } },
  // Emoji straddle every slice boundary of a long string and must survive the slicing.
  { name: "a long string of surrogate pairs", value: { data: "a" + "😀".repeat(100_000) + "é\n".repeat(50_000) } },
];

for (const c of TREES) {
  Deno.test(`jsonPieces() writes exactly what JSON.stringify writes: ${c.name}`, async () => {
    assert.equal([...jsonPieces(c.value)].join(""), JSON.stringify(c.value));
    const streamed = uploadBody(c.value as Record<string, never>, STREAM_BODY_ABOVE + 1);
    assert.ok(streamed instanceof ReadableStream);
    assert.equal(await drained(streamed), JSON.stringify(c.value));
  });
}

Deno.test("readBodyBytes() gives no bytes for a request without a body, with or without a content-length of 0", async () => {
  for (const headers of [{}, { "content-length": "0" }] as Record<string, string>[]) {
    const req = new Request("http://gateway.test/v1/messages", { method: "POST", headers });
    assert.equal((await readBodyBytes(req, options)).byteLength, 0, JSON.stringify(headers));
  }
});

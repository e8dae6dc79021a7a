/**
 * @module A non-streamed answer's body: read whole within its limit (with a Content-Length or without), refused past
 * it without reading on, decoded and parsed once with the upstream's secrets out, its text let go of for a
 * translation, and written out in pieces that join to exactly the text a whole body would have.
 */
import assert from "node:assert/strict";
import { textRedactor } from "../../src/core/redact.ts";
import { openAnswer, passedResponse, readAnswerBytes, translatedResponse } from "../../src/relay/answer_body.ts";

const encoder = new TextEncoder();

/** A response whose body comes in `pieces`, with a Content-Length when `declared` says so. */
function answer(text: string, declared: boolean, piece = 1000): { res: Response; pulled: () => number } {
  const bytes = encoder.encode(text);
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(pulled, pulled + piece));
      pulled += piece;
    },
  });
  const headers = declared ? { "content-length": String(bytes.length) } : undefined;
  return { res: new Response(body, { headers }), pulled: () => pulled };
}

for (const declared of [true, false]) {
  Deno.test(`readAnswerBytes() reads an answer at its limit whole, and refuses one past it (${declared ? "with" : "without"} a Content-Length)`, async () => {
    const text = "é".repeat(50_000);
    const whole = answer(text, declared);
    const read = await readAnswerBytes(whole.res, 100_000, "up");
    assert.equal(new TextDecoder().decode(read.bytes), text);
    const over = answer(`${text}x`, declared);
    await assert.rejects(() => readAnswerBytes(over.res, 100_000, "up"), {
      message: 'Upstream "up" answered with a body larger than its limit of 100000 bytes (max_answer_bytes)',
    });
    assert.ok(over.pulled() <= (declared ? 1000 : 101_000), `read ${over.pulled()} bytes of a refused answer`);
  });
}

Deno.test("openAnswer() parses the text with the secrets out, and lets go of it when asked", () => {
  const read = { bytes: encoder.encode('{"text":"key sk-secret-1 and \\u0073k-secret-1"}') };
  const opened = openAnswer(read, textRedactor(["sk-secret-1"]));
  assert.equal(read.bytes, undefined, "the bytes are let go of once decoded");
  assert.deepEqual(opened.json, { text: "key [redacted] and [redacted]" });
  assert.match(opened.text, /\[redacted\] and \[redacted\]/);
  opened.release();
  assert.equal(opened.text, "");
  assert.equal(openAnswer({ bytes: encoder.encode("<html>") }, textRedactor([])).json, undefined);
});

Deno.test("passedResponse() and translatedResponse() write large answers in pieces that join to the whole", async () => {
  // An emoji across every slice boundary: a piece is never cut between its two halves.
  const long = "a" + "😀".repeat(100_000);
  for (const text of ["small", long, `{"long":"${long}"}`]) {
    const res = passedResponse(text, 200);
    assert.equal(await res.text(), text);
  }
  for (const value of [{ small: 1 }, { long, list: [1, null, "x"], nested: { long } }]) {
    const res = translatedResponse(value);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(await res.text(), JSON.stringify(value));
  }
});

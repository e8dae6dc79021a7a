/** @module Tests for taking secrets out of stream bytes, however the stream is cut into chunks. */
import assert from "node:assert/strict";
import { byteRedactor } from "../../src/core/byte_redact.ts";
import { REDACTED, secretForms } from "../../src/core/redact.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const KEY = "sk-upstream-0123456789abcdef";
const EVENTS = 'event: ping\ndata: {"type":"ping"}\n\n' +
  `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"bad key ${KEY}"}}\n\n`;

/** What a client gets when `text` is cut at `cuts` (byte offsets) and each piece passes the redactor in turn. */
function through(secrets: string[], text: string, cuts: number[]): string {
  const redactor = byteRedactor(secrets)!;
  const bytes = encoder.encode(text);
  let out = "";
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out += decoder.decode(redactor.push(bytes.subarray(from, cut)), { stream: true });
    from = cut;
  }
  return out;
}

Deno.test("byteRedactor() replaces a key split at every byte between two chunks", () => {
  const want = EVENTS.replace(KEY, REDACTED);
  for (let at = 0; at <= EVENTS.length; at++) assert.equal(through([KEY], EVENTS, [at]), want, `split at ${at}`);
});

Deno.test("byteRedactor() replaces a key sent one byte per chunk", () => {
  const cuts = Array.from({ length: EVENTS.length - 1 }, (_, i) => i + 1);
  assert.equal(through([KEY], EVENTS, cuts), EVENTS.replace(KEY, REDACTED));
});

Deno.test("byteRedactor() replaces every occurrence, of every secret, in one chunk", () => {
  const other = "another-upstream-token";
  const text = `${KEY} and ${other}, ${KEY} again${KEY}`;
  assert.equal(through([KEY, other], text, []), `${REDACTED} and ${REDACTED}, ${REDACTED} again${REDACTED}`);
});

Deno.test("byteRedactor() holds nothing back after a whole event, so events are not delayed", () => {
  const redactor = byteRedactor([KEY])!;
  const event = encoder.encode('event: ping\ndata: {"type":"ping"}\n\n');
  assert.equal(redactor.push(event).length, event.length);
  assert.equal(redactor.holding(), false);
});

Deno.test("byteRedactor() holds back only what could begin a key, and drops it at the end", () => {
  const redactor = byteRedactor([KEY])!;
  assert.equal(decoder.decode(redactor.push(encoder.encode("data: sk-up"))), "data: ");
  assert.equal(redactor.holding(), true);
  // A near miss is released once it can no longer be a key.
  assert.equal(decoder.decode(redactor.push(encoder.encode("s and sk-"))), "sk-ups and ");
  redactor.drop();
  assert.equal(redactor.holding(), false);
  assert.equal(decoder.decode(redactor.push(encoder.encode("\n\n"))), "\n\n");
});

Deno.test("byteRedactor() finds a secret longer than 255 bytes, and its JSON-escaped form", () => {
  const pem = `-----BEGIN PRIVATE KEY-----\n${"A".repeat(300)}\n-----END PRIVATE KEY-----\n`;
  const quoted = JSON.stringify({ message: `bad key ${pem}` });
  assert.ok(!quoted.includes(pem), "the JSON form differs");
  for (const text of [pem, quoted]) {
    for (const at of [0, 10, 200, 320]) {
      const out = through([pem], text, [at]);
      assert.ok(!out.includes("A".repeat(300)), `split at ${at}: ${out}`);
      assert.ok(out.includes(REDACTED));
    }
  }
});

Deno.test("byteRedactor() is undefined when there is no secret to take out", () => {
  assert.equal(byteRedactor([]), undefined);
  assert.equal(byteRedactor([""]), undefined);
  assert.deepEqual(secretForms(["", "plain", "a\nb"]), ["plain", "a\nb", "a\\nb", "a\\\\nb"]);
});

Deno.test("byteRedactor() agrees with replacing in the whole text for a secret that overlaps itself", () => {
  const secret = "abcabd";
  const text = "xabcabcabdyabcab abcabd abcababcabd";
  const want = text.replaceAll(secret, REDACTED);
  for (let a = 0; a <= text.length; a++) {
    for (let b = a; b <= text.length; b++) assert.equal(through([secret], text, [a, b]), want, `cut at ${a}, ${b}`);
  }
});

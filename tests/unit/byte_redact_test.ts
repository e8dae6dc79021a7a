/** @module Tests for taking secrets out of stream bytes, however the stream is cut into chunks. */
import assert from "node:assert/strict";
import { byteRedactor, MAX_HELD_RUN } from "../../src/core/byte_redact.ts";
import { REDACTED, secretForms, textRedactor } from "../../src/core/redact.ts";

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

/** A key as JSON string content, each way an encoder may write it. */
const ESCAPED_KEY = "sk-up/stream+0123456789abcdef";
const ESCAPINGS: Record<string, string> = {
  "its first letter as \\u": `\\u0073${ESCAPED_KEY.slice(1)}`,
  "every character as \\u, in upper case": [...ESCAPED_KEY].map((c) =>
    `\\u${c.charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()}`
  ).join(""),
  "its slash as \\/": ESCAPED_KEY.replace("/", "\\/"),
  "escaped twice, inside JSON in a string": JSON.stringify(JSON.stringify({ k: `\\u0073${ESCAPED_KEY.slice(1)}` })),
};

for (const [name, written] of Object.entries(ESCAPINGS)) {
  Deno.test(`byteRedactor() takes out a key written with ${name}, cut anywhere, as the whole text's redactor does`, () => {
    const text = 'event: ping\ndata: {"type":"ping"}\n\n' +
      `event: content_block_delta\ndata: {"delta":{"text":"key ${written} \\u00e9t\\u00e9 \\/ok"}}\n\n`;
    const want = textRedactor([ESCAPED_KEY]).text(text);
    assert.ok(want.includes(REDACTED) && !want.includes(written), want);
    for (let at = 0; at <= text.length; at++) assert.equal(through([ESCAPED_KEY], text, [at]), want, `split at ${at}`);
    const cuts = Array.from({ length: text.length - 1 }, (_, i) => i + 1);
    assert.equal(through([ESCAPED_KEY], text, cuts), want, "one byte per chunk");
  });
}

Deno.test("byteRedactor() holds a run that may be a key written with escapes until it ends, and nothing else", () => {
  const redactor = byteRedactor([ESCAPED_KEY])!;
  const event = encoder.encode('data: {"text":"caf\\u00e9 and \\n more"}\n\n');
  assert.equal(redactor.push(event).length, event.length, "a whole event goes out at once");
  const plain = encoder.encode('data: {"text":"a \\n plain line, unfinished');
  assert.equal(redactor.push(plain).length, plain.length, "text that cannot be a key is not held");
  assert.equal(decoder.decode(redactor.push(encoder.encode('"}\ndata: {"text":"\\u0073k-up'))), '"}\ndata: {"text":"');
  assert.equal(redactor.holding(), true);
  assert.equal(decoder.decode(redactor.push(encoder.encode("/stream+0123456789abcdef"))), "");
  assert.equal(decoder.decode(redactor.push(encoder.encode(' ok"}\n\n'))), `${REDACTED} ok"}\n\n`);
  assert.equal(redactor.holding(), false);
});

Deno.test("byteRedactor() sends an over-long run that may be a key with escapes but for its last bytes, searched", () => {
  const redactor = byteRedactor([ESCAPED_KEY])!;
  // The key, then 1.5 MiB of bytes a key with escapes could be made of: one run that may go on.
  const head = 'data: {"text":"';
  const piece = encoder.encode("a".repeat(64 * 1024));
  let out = decoder.decode(redactor.push(encoder.encode(`${head}\\u0073k-up/stream+0123456789abcdef`)));
  let most = 0;
  for (let i = 0; i < 24; i++) {
    out += decoder.decode(redactor.push(piece));
    const sent = out.length - (out.includes(REDACTED) ? REDACTED.length - ESCAPED_KEY.length - 5 : 0);
    most = Math.max(most, head.length + ESCAPED_KEY.length + 5 + 64 * 1024 * (i + 1) - sent);
  }
  assert.ok(most > 64 * 1024, "the run is held while it may be a key");
  assert.ok(most <= MAX_HELD_RUN + 64 * 1024, `held ${most} bytes of one run`);
  out += decoder.decode(redactor.push(encoder.encode('"}\n\n')));
  assert.equal(out, `${head}${REDACTED}${"a".repeat(24 * 64 * 1024)}"}\n\n`);
});

Deno.test("byteRedactor()'s escaped search costs the same for one long run of backslashes as for many short ones", () => {
  // As for the whole text's search (redact_test.ts): the same length, one run of 16,000 or 32 runs of 500.
  const long = encoder.encode(`data: "\\u${"\\".repeat(16_000)}"\n`);
  const short = encoder.encode(`data: "\\u${`${"\\".repeat(499)}x`.repeat(32)}"\n`);
  assert.equal(long.length, short.length);
  const fastest = (bytes: Uint8Array) => {
    let best = Infinity;
    for (let i = 0; i < 5; i++) {
      const redactor = byteRedactor([ESCAPED_KEY])!;
      const started = performance.now();
      redactor.push(bytes);
      best = Math.min(best, performance.now() - started);
    }
    return best;
  };
  fastest(short);
  const ratio = fastest(long) / Math.max(fastest(short), 0.01);
  assert.ok(ratio < 6, `one long run took ${ratio.toFixed(1)} times as long as as many short ones`);
});

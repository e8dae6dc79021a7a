/** Tests for the byte search that finds markers in stream bytes without decoding them. */
import assert from "node:assert/strict";
import {
  byteMarker,
  bytePattern,
  hasAnyMarker,
  hasMarker,
  indexOfMarker,
  markerSet,
} from "../../src/core/byte_search.ts";

const encode = (text: string) => new TextEncoder().encode(text);

const CASES = [
  { name: "finds a marker at the start", haystack: "usage: 1", marker: "usage", want: true },
  { name: "finds a marker at the very end", haystack: '{"type":"message_stop"', marker: "message_stop", want: true },
  {
    name: "finds a marker in the middle",
    haystack: 'data: {"usage":{"output_tokens":3}}',
    marker: "usage",
    want: true,
  },
  { name: "misses an absent marker", haystack: 'data: {"type":"content_block_delta"}', marker: "usage", want: false },
  { name: "misses a marker cut at the end", haystack: "data: messag", marker: "message_stop", want: false },
  { name: "finds a marker after a repeated prefix", haystack: "aaaab", marker: "aab", want: true },
  { name: "finds a one-byte marker", haystack: "abc", marker: "c", want: true },
  { name: "misses in an empty haystack", haystack: "", marker: "x", want: false },
  { name: "finds a marker equal to the haystack", haystack: "[DONE]", marker: "[DONE]", want: true },
  { name: "is case-sensitive", haystack: "ERROR", marker: "error", want: false },
];
for (const c of CASES) {
  Deno.test(`hasMarker() ${c.name}`, () => {
    assert.equal(hasMarker(encode(c.haystack), byteMarker(c.marker)), c.want);
  });
}

Deno.test("hasMarker() looks only before the end it is given", () => {
  const bytes = encode("data: x\n\nevent: error\n");
  assert.equal(hasMarker(bytes, byteMarker("error")), true);
  assert.equal(hasMarker(bytes, byteMarker("error"), 9), false);
  assert.equal(hasMarker(bytes, byteMarker("error"), bytes.indexOf(10, 12)), true);
});

Deno.test("hasMarker() agrees with a plain search on every position of a marker in text", () => {
  const marker = byteMarker("finish_reason");
  const filler = 'data: {"choices":[{"delta":{"content":"rea son fin"},"index":0}]}';
  for (let at = 0; at <= filler.length; at++) {
    const text = filler.slice(0, at) + "finish_reason" + filler.slice(at);
    assert.equal(hasMarker(encode(text), marker), true, `at ${at}`);
    assert.equal(hasMarker(encode(text.replace("finish_reason", "finish_reasom")), marker), false, `at ${at}`);
  }
});

Deno.test("hasAnyMarker() is true when one of several markers occurs", () => {
  const markers = markerSet(["usage", "error", "message_stop"].map(byteMarker));
  assert.equal(hasAnyMarker(encode('{"type":"message_stop"}'), markers), true);
  assert.equal(hasAnyMarker(encode('{"type":"ping"}'), markers), false);
});

Deno.test("hasAnyMarker() agrees with a search per marker at every position, and only before the end", () => {
  const texts = ["usage", "error", "[DONE]", "finish_reason", "response.failed", "finishReason", "usageMetadata"];
  const set = markerSet(texts.map(byteMarker));
  const each = (bytes: Uint8Array, end: number) => texts.some((text) => hasMarker(bytes, byteMarker(text), end));
  const filler = '{"type":"content_block_delta","delta":{"text":"use a[DONE finish_reaso erro."}}';
  assert.equal(hasAnyMarker(encode(filler), set), false);
  for (const marker of texts) {
    for (let at = 0; at <= filler.length; at++) {
      const bytes = encode(filler.slice(0, at) + marker + filler.slice(at));
      assert.equal(hasAnyMarker(bytes, set), true, `${marker} at ${at}`);
      for (const end of [at + marker.length - 1, at + marker.length]) {
        assert.equal(hasAnyMarker(bytes, set, end), each(bytes, end), `${marker} at ${at} before ${end}`);
      }
      const broken = encode(filler.slice(0, at) + marker.slice(0, -1) + "#" + filler.slice(at));
      assert.equal(hasAnyMarker(broken, set), each(broken, broken.length), `${marker} broken at ${at}`);
    }
  }
  assert.throws(() => markerSet([]), RangeError);
});

Deno.test("byteMarker() refuses an empty, non-ASCII or overlong marker", () => {
  for (const text of ["", "usagé", "x".repeat(256)]) assert.throws(() => byteMarker(text), RangeError);
});

Deno.test("indexOfMarker() finds where a pattern is, from a start, and patterns longer than 255 bytes", () => {
  const long = "x".repeat(300) + "y";
  const bytes = encode(`ab ${long} ab ${long}`);
  assert.equal(indexOfMarker(bytes, byteMarker("ab")), 0);
  assert.equal(indexOfMarker(bytes, byteMarker("ab"), 1), long.length + 4);
  assert.equal(indexOfMarker(bytes, byteMarker("zz")), -1);
  const pattern = bytePattern(encode(long));
  assert.equal(indexOfMarker(bytes, pattern), 3);
  assert.equal(indexOfMarker(bytes, pattern, 4), long.length + 7);
  assert.equal(indexOfMarker(encode("x".repeat(400)), pattern), -1);
  assert.throws(() => bytePattern(new Uint8Array(0)), RangeError);
});

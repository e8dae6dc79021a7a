/** @module fitsKey(): which client texts may be a part of a KV key, counted in UTF-8 bytes. */
import assert from "node:assert/strict";
import { fitsKey, MAX_KEY_TEXT_BYTES } from "../../src/core/key_text.ts";

const CASES = [
  { name: "an empty text", text: "", fits: true },
  { name: "a token id", text: "tok_0123456789abcdef", fits: true },
  { name: "exactly the bound in ASCII", text: "a".repeat(MAX_KEY_TEXT_BYTES), fits: true },
  { name: "one byte past the bound", text: "a".repeat(MAX_KEY_TEXT_BYTES + 1), fits: false },
  { name: "the bound in two-byte characters", text: "é".repeat(MAX_KEY_TEXT_BYTES / 2), fits: true },
  { name: "past the bound in two-byte characters", text: "é".repeat(MAX_KEY_TEXT_BYTES / 2 + 1), fits: false },
  { name: "past the bound in four-byte characters", text: "😀".repeat(129), fits: false },
  { name: "within it in three-byte characters", text: "中".repeat(170), fits: true },
];

for (const c of CASES) {
  Deno.test(`fitsKey() is ${c.fits} for ${c.name}`, () => assert.equal(fitsKey(c.text), c.fits));
}

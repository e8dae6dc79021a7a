/**
 * @module SSE chunk boundaries: every stream translator gives byte-identical output however the upstream's
 * bytes are cut, including inside a multi-byte character and between CR and LF.
 */
import assert from "node:assert/strict";
import { fixture } from "../_helpers.ts";
import { translatedPairs, translateFixture } from "../_translate_helpers.ts";

const FIXTURES = ["text", "tool_use"];

for (const { pair, client, upstream, translator } of translatedPairs()) {
  for (const name of FIXTURES) {
    Deno.test(`${pair} gives the same ${name} stream when the upstream bytes are split at every offset`, async () => {
      const bytes = new TextEncoder().encode(fixture(`${upstream}/${name}.sse`));
      const whole = await translateFixture(translator, client, [bytes]);
      for (let at = 1; at < bytes.length; at++) {
        const got = await translateFixture(translator, client, [bytes.subarray(0, at), bytes.subarray(at)]);
        if (got !== whole) assert.equal(got, whole, `split at byte ${at}`);
      }
      const single = Array.from(bytes, (b) => Uint8Array.of(b));
      assert.equal(await translateFixture(translator, client, single), whole, "one byte per chunk");
    });
  }
  Deno.test(`${pair} reads CRLF-framed upstream events split between CR and LF`, async () => {
    const text = fixture(`${upstream}/text.sse`);
    const whole = await translateFixture(translator, client, [new TextEncoder().encode(text)]);
    const crlf = new TextEncoder().encode(text.replaceAll("\n", "\r\n"));
    const chunks = [];
    let start = 0;
    for (let i = 0; i < crlf.length; i++) {
      if (crlf[i] === 13) {
        chunks.push(crlf.subarray(start, i + 1));
        start = i + 1;
      }
    }
    chunks.push(crlf.subarray(start));
    assert.equal(await translateFixture(translator, client, chunks), whole);
  });
}

Deno.test("the text fixtures carry multi-byte characters, so splits land inside them", () => {
  for (const upstream of ["anthropic", "openai-chat"]) {
    const text = fixture(`${upstream}/text.sse`);
    assert.ok(new TextEncoder().encode(text).length > text.length, upstream);
    assert.match(text, /🌍/);
  }
});

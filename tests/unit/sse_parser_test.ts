/** @module The SSE parser reads the same events however the text is cut: whole, at every offset, a character at a time. */
import assert from "node:assert/strict";
import { type SseMessage, SseParser } from "../../src/core/sse.ts";

const CASES: { name: string; text: string; want: SseMessage[] }[] = [
  {
    name: "LF endings, a comment and a named event",
    text: ': hi\nevent: ping\ndata: {"a":1}\n\ndata: two\n\n',
    want: [{ event: "ping", data: '{"a":1}' }, { event: undefined, data: "two" }],
  },
  {
    name: "CRLF and CR endings, multi-line data",
    text: "\ufeffdata: a\r\ndata: b\r\n\r\nevent: e\rdata:c\r\r",
    want: [{ event: undefined, data: "a\nb" }, { event: "e", data: "c" }],
  },
  {
    name: "a long line",
    text: `data: ${"x".repeat(5000)}\n\n`,
    want: [{ event: undefined, data: "x".repeat(5000) }],
  },
];

function parsed(pieces: string[]): SseMessage[] {
  const parser = new SseParser();
  return pieces.flatMap((piece) => parser.push(piece));
}

for (const c of CASES) {
  Deno.test(`SseParser reads ${c.name} the same however it is cut`, () => {
    assert.deepEqual(parsed([c.text]), c.want);
    assert.deepEqual(parsed([...c.text]), c.want, "a character at a time");
    for (let at = 0; at <= c.text.length; at += c.text.length > 100 ? 97 : 1) {
      assert.deepEqual(parsed([c.text.slice(0, at), c.text.slice(at)]), c.want, `cut at ${at}`);
    }
  });
}

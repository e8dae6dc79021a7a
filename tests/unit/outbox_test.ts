/**
 * @module Translated events on their way out: a value written as JSON in bounded pieces, small events sent together,
 * a large event sent in pieces made only when their turn comes, and a Responses answer of a large text relayed in
 * pieces that are never the size of the text, with the same events a client parses.
 */
import assert from "node:assert/strict";
import { holdsMoreThan, jsonPieces } from "../../src/core/json_pieces.ts";
import { REDACTED, textRedactor } from "../../src/core/redact.ts";
import { type SseMessage, SseParser } from "../../src/core/sse.ts";
import { outbox, PIECE_CHARS } from "../../src/relay/outbox.ts";
import { relayStream } from "../../src/relay/stream.ts";
import { pickTranslator } from "../../src/translate/mod.ts";
import { usageMeter } from "../../src/usage/meter.ts";
import { testContext } from "../_translate_helpers.ts";

const decoder = new TextDecoder();
const LONG = 'ab\u00e9\ud83d\ude00"\\\n'.repeat(3000);

const VALUES: { name: string; value: unknown }[] = [
  { name: "scalars", value: [1, -2.5, true, false, null, "", "x"] },
  {
    name: "nesting, undefined members and array holes",
    value: { a: { b: [1, { c: "d" }] }, u: undefined, h: [undefined] },
  },
  { name: "a long string with escapes and surrogate pairs", value: { type: "t", text: LONG, after: [LONG, 1] } },
];

for (const c of VALUES) {
  Deno.test(`jsonPieces() writes ${c.name} as JSON.stringify does, in bounded pieces`, () => {
    const pieces = [...jsonPieces(c.value, 1000)];
    assert.equal(pieces.join(""), JSON.stringify(c.value));
    // A piece runs past the size only by the JSON of one string slice or one short value.
    for (const piece of pieces) assert.ok(piece.length <= 1000 * 6 + 100, `a piece of ${piece.length}`);
  });
}

Deno.test("jsonPieces() never cuts a surrogate pair, and passes every string and name through the redaction", () => {
  const pair = "\ud83d\ude00";
  const text = "a".repeat(999) + pair + "b";
  for (const piece of jsonPieces({ text }, 1000)) assert.ok(!/[\ud800-\udbff]$/.test(piece), "a piece ends mid-pair");
  const redact = (s: string) => s.replaceAll("sk-key", REDACTED);
  assert.equal(
    [...jsonPieces({ "sk-key": `a sk-key ${text}` }, 1000, redact)].join(""),
    JSON.stringify({ [REDACTED]: `a ${REDACTED} ${text}` }),
  );
});

Deno.test("holdsMoreThan() counts strings and names, and stops early", () => {
  assert.equal(holdsMoreThan({ abc: ["de", 5] }, 5), false);
  assert.equal(holdsMoreThan({ abc: ["def", 5] }, 5), true);
});

/** An event made from `payload` whose data is made only when read, counting the reads. */
function valueEvent(event: string, payload: unknown, reads: { n: number }): SseMessage {
  return {
    event,
    payload,
    get data() {
      reads.n++;
      return JSON.stringify(payload);
    },
  };
}

Deno.test("outbox() sends small events together and a large one alone in pieces, each made when its turn comes", () => {
  const reads = { n: 0 };
  const big = { type: "done", text: "x".repeat(PIECE_CHARS * 3) };
  const box = outbox(textRedactor(["sk-key"]));
  box.add([{ event: "a", data: '{"n":1}' }, { event: "b", data: '{"k":"sk-key"}' }, valueEvent("big", big, reads)]);
  box.add([{ event: "c", data: '{"n":3}' }]);
  const first = decoder.decode(box.next());
  assert.equal(first, `event: a\ndata: {"n":1}\n\nevent: b\ndata: {"k":"${REDACTED}"}\n\n`);
  const pieces: string[] = [];
  for (let piece = box.next(); piece; piece = box.next()) pieces.push(decoder.decode(piece));
  assert.equal(reads.n, 0, "the large event's data string is never made");
  assert.ok(pieces.length >= 4, `${pieces.length} pieces`);
  for (const piece of pieces) assert.ok(piece.length <= PIECE_CHARS + 100, `a piece of ${piece.length}`);
  assert.equal(pieces.join(""), `event: big\ndata: ${JSON.stringify(big)}\n\nevent: c\ndata: {"n":3}\n\n`);
  assert.equal(box.next(), undefined);
});

Deno.test("a Responses answer of a large text is relayed in pieces, never in one chunk of the text's size", async () => {
  const text = "lorem ipsum ".repeat(100_000);
  const events = [
    {
      type: "message_start",
      message: { id: "m", type: "message", role: "assistant", model: "m", content: [], usage: {} },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    ...Array.from(
      { length: 10 },
      () => ({
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: text.slice(0, text.length / 10) },
      }),
    ),
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } },
    { type: "message_stop" },
  ];
  const upstream = ReadableStream.from(
    events.map((e) => new TextEncoder().encode(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)),
  );
  const translation = pickTranslator("openai-responses", "anthropic")!(testContext());
  translation.request({ model: "m", input: "hi", stream: true });
  const client = relayStream(upstream.getReader(), new Uint8Array(0), {
    protocol: "openai-responses",
    step: translation.stream!(),
    meter: usageMeter("anthropic"),
    upstream: new AbortController(),
    upstreamName: "up",
    secrets: ["sk-key"],
    onFirstByte() {},
    onEnd() {},
  });
  const parser = new SseParser();
  const got: SseMessage[] = [];
  for await (const chunk of client) {
    assert.ok(chunk.byteLength < text.length / 2, `a chunk of ${chunk.byteLength} bytes`);
    got.push(...parser.push(decoder.decode(chunk, { stream: true })));
  }
  const done = got.find((e) => e.event === "response.output_text.done")!;
  assert.equal(JSON.parse(done.data).text, text);
  const completed = JSON.parse(got.at(-1)!.data);
  assert.equal(completed.type, "response.completed");
  assert.equal(completed.response.output[0].content[0].text, text);
  assert.deepEqual(got.map((e) => JSON.parse(e.data).sequence_number), got.map((_, i) => i));
});

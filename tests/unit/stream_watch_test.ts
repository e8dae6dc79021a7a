/**
 * Tests for watching passthrough bytes: whatever the chunking and line endings, the usage meter ends up where full
 * parsing leaves it, and events without a marker are never parsed.
 */
import assert from "node:assert/strict";
import { SseParser } from "../../src/core/sse.ts";
import type { UpstreamProtocol } from "../../src/core/types.ts";
import { lastEventEnd, streamWatch } from "../../src/relay/stream_watch.ts";
import { usageMeter } from "../../src/usage/meter.ts";

const encoder = new TextEncoder();
const FIXTURES = new URL("../fixtures/", import.meta.url);

function chunks(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size));
  return out;
}

/** The meter after every event of `text`, parsed whole. */
function fullyParsed(text: string, protocol: UpstreamProtocol) {
  const meter = usageMeter(protocol);
  for (const message of new SseParser().push(text + "\n\n")) meter.event(message);
  return { usage: meter.usage(), state: meter.state() };
}

/** The meter after the text's bytes went through a watch in chunks of `size`. */
function watched(text: string, protocol: UpstreamProtocol, size: number) {
  const meter = usageMeter(protocol);
  const watch = streamWatch(meter.markers, meter.event);
  const bytes = encoder.encode(text);
  for (const chunk of chunks(bytes, size)) watch.push(chunk);
  watch.end();
  return { usage: meter.usage(), state: meter.state() };
}

const SOURCES: [string, UpstreamProtocol][] = [["anthropic", "anthropic"], ["openai-chat", "openai-chat"]];
for (const [folder, protocol] of SOURCES) {
  for (const entry of Deno.readDirSync(new URL(`${folder}/`, FIXTURES))) {
    if (!entry.name.endsWith(".sse")) continue;
    const text = Deno.readTextFileSync(new URL(`${folder}/${entry.name}`, FIXTURES));
    Deno.test(`streamWatch() leaves the meter as full parsing does: ${folder}/${entry.name}`, () => {
      for (const variant of [text, text.replaceAll("\n", "\r\n"), text.replaceAll("\n", "\r")]) {
        const want = fullyParsed(variant, protocol);
        for (const size of [1, 2, 7, 64, variant.length]) {
          assert.deepEqual(watched(variant, protocol, size), want, `chunks of ${size}`);
        }
      }
    });
  }
}

Deno.test("streamWatch() parses only the events that hold a marker", () => {
  const seen: string[] = [];
  const watch = streamWatch(usageMeter("anthropic").markers, (message) => seen.push(message.event ?? ""));
  const events = [
    'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3}}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"Hi"}}\n\n',
    'event: ping\ndata: {"type":"ping"}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":1}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ];
  for (const event of events) watch.push(encoder.encode(event));
  watch.end();
  assert.deepEqual(seen, ["message_start", "message_delta", "message_stop"]);
});

Deno.test("streamWatch() reads an event split across chunks once it has ended", () => {
  const seen: string[] = [];
  const watch = streamWatch(usageMeter("anthropic").markers, (message) => seen.push(message.data));
  watch.push(encoder.encode('event: message_delta\ndata: {"type":"message_delta","us'));
  assert.deepEqual(seen, []);
  watch.push(encoder.encode('age":{"output_tokens":1}}\n'));
  assert.deepEqual(seen, []);
  watch.push(encoder.encode("\nevent: ping\n"));
  assert.deepEqual(seen, ['{"type":"message_delta","usage":{"output_tokens":1}}']);
});

Deno.test("streamWatch() reads an event the stream never ended, at its end", () => {
  const meter = usageMeter("anthropic");
  const watch = streamWatch(meter.markers, meter.event);
  watch.push(encoder.encode('event: message_stop\ndata: {"type":"message_stop"}'));
  assert.equal(meter.state(), "open");
  watch.end();
  assert.equal(meter.state(), "finished");
});

Deno.test("streamWatch() reads a very long event as it comes instead of holding all of it", () => {
  const seen: string[] = [];
  const watch = streamWatch(usageMeter("anthropic").markers, (message) => seen.push(message.data));
  const data = `{"usage":{},"t":"${"x".repeat(70_000)}"}`;
  watch.push(encoder.encode(`data: ${data.slice(0, 70_000)}`));
  watch.push(encoder.encode(`${data.slice(70_000)}\n\n`));
  assert.deepEqual(seen, [data]);
});

const LAST_END = [
  { name: "the end of a chunk that ends an event", text: "data: a\n\n", want: 9 },
  { name: "the last blank line of several", text: "data: a\n\ndata: b\n\ndata: c", want: 18 },
  { name: "nothing without a blank line", text: "data: a\ndata: b\n", want: 0 },
  { name: "nothing in an empty chunk", text: "", want: 0 },
];
for (const c of LAST_END) {
  Deno.test(`lastEventEnd() finds ${c.name}`, () => assert.equal(lastEventEnd(encoder.encode(c.text)), c.want));
}

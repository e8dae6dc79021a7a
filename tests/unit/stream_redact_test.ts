/**
 * @module The stream relay keeps an upstream's key from its client on every byte path: passed through or translated,
 * in an event after the first, and split at any byte between two upstream chunks.
 */
import assert from "node:assert/strict";
import type { Protocol } from "../../src/core/types.ts";
import { relayStream } from "../../src/relay/stream.ts";
import { pickTranslator } from "../../src/translate/mod.ts";
import { usageMeter } from "../../src/usage/meter.ts";
import { readText } from "../_reads.ts";
import { SAMPLE_REQUESTS, testContext } from "../_translate_helpers.ts";

const KEY = "upstream-anthropic-key-0123456789";
const START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",' +
  '"role":"assistant","model":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}\n\n';
const ERROR =
  `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"bad key ${KEY} (${KEY})"}}\n\n`;
const STREAM = new TextEncoder().encode(START + ERROR);

/** What a client of `client` gets from an Anthropic upstream that sends `chunks`, with KEY as the upstream's secret. */
async function relayed(client: Protocol, chunks: Uint8Array[]): Promise<string> {
  const translator = pickTranslator(client, "anthropic");
  const translation = translator?.(testContext());
  translation?.request(structuredClone(SAMPLE_REQUESTS[client]));
  const body = relayStream(ReadableStream.from(chunks).getReader(), new Uint8Array(0), {
    protocol: client,
    step: translation?.stream?.(),
    meter: usageMeter("anthropic"),
    upstream: new AbortController(),
    upstreamName: "up",
    secrets: [KEY],
    onFirstByte() {},
    onEnd() {},
  });
  return await readText(new Response(body));
}

for (const client of ["anthropic", "openai-chat", "openai-responses"] as const) {
  const how = client === "anthropic" ? "passed through" : `translated for ${client}`;
  Deno.test(`relayStream() ${how}: a key in a later error event is redacted, split at any byte`, async () => {
    const whole = await relayed(client, [STREAM]);
    assert.ok(!whole.includes(KEY), whole);
    assert.match(whole, /bad key \[redacted\] \(\[redacted\]\)/);
    const keyAt = START.length + ERROR.indexOf(KEY);
    for (let at = keyAt - 1; at <= keyAt + KEY.length + 1; at++) {
      const got = await relayed(client, [STREAM.subarray(0, at), STREAM.subarray(at)]);
      // Ids and times are the translator's own and the same each run, so the output is the same however it is cut.
      assert.equal(got, whole, `split at byte ${at}`);
    }
  });
}

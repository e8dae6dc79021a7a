/** @module tokenCount() and invalidCounts(): what an upstream's token counts are read as, and which are reported. */
import assert from "node:assert/strict";
import { SseParser } from "../../src/core/sse.ts";
import { invalidCounts, MAX_TOKEN_COUNT, tokenCount } from "../../src/core/usage.ts";
import { usageMeter } from "../../src/usage/meter.ts";

const COUNTS: { name: string; value: unknown; want: number }[] = [
  { name: "a whole count", value: 12, want: 12 },
  { name: "the bound", value: MAX_TOKEN_COUNT, want: MAX_TOKEN_COUNT },
  { name: "a fraction, cut", value: 7.9, want: 7 },
  { name: "a negative count", value: -5, want: 0 },
  { name: "one past the bound", value: MAX_TOKEN_COUNT + 1, want: 0 },
  { name: "1e20", value: 1e20, want: 0 },
  { name: "2^53", value: 2 ** 53, want: 0 },
  { name: "Infinity", value: Infinity, want: 0 },
  { name: "NaN", value: NaN, want: 0 },
  { name: "a string", value: "12", want: 0 },
];

for (const c of COUNTS) {
  Deno.test(`tokenCount() reads ${c.name} as ${c.want}`, () => assert.equal(tokenCount(c.value), c.want));
}

Deno.test("invalidCounts() names every count cut or dropped, nested ones by path, and nothing else", () => {
  const usage = {
    input_tokens: 1e20,
    output_tokens: 3,
    cache_read_input_tokens: -1,
    cache_creation_input_tokens: null,
    service_tier: "standard",
    reasoning_tokens: "many",
    prompt_tokens_details: { cached_tokens: 2 ** 53, audio_tokens: 0 },
    cache_creation: { ephemeral_5m_input_tokens: 1.5 },
  };
  assert.deepEqual(invalidCounts(usage), [
    "input_tokens",
    "cache_read_input_tokens",
    "reasoning_tokens",
    "prompt_tokens_details.cached_tokens",
    "cache_creation.ephemeral_5m_input_tokens",
  ]);
  assert.deepEqual(invalidCounts({ input_tokens: 5, output_tokens: 2 }), []);
  assert.deepEqual(invalidCounts("not an object"), []);
});

Deno.test("invalidCounts() reads Gemini's usageMetadata by its own names, arrays of details left alone", () => {
  const usage = {
    promptTokenCount: 2 ** 53,
    candidatesTokenCount: "many",
    thoughtsTokenCount: 4,
    cachedContentTokenCount: -1,
    totalTokenCount: 6,
    trafficType: "ON_DEMAND",
    promptTokensDetails: [{ modality: "TEXT", tokenCount: 2 }],
  };
  assert.deepEqual(invalidCounts(usage), ["promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount"]);
});

Deno.test("a Gemini stream's absurd usageMetadata is reported and read as 0", () => {
  const reported: string[][] = [];
  const meter = usageMeter("gemini", (fields) => reported.push(fields));
  const usage = { promptTokenCount: 1e20, candidatesTokenCount: 2, totalTokenCount: 1e20 };
  const sse = `data: ${JSON.stringify({ candidates: [{ finishReason: "STOP" }], usageMetadata: usage })}\n\n`;
  for (const message of new SseParser().push(sse)) meter.event(message);
  assert.deepEqual(reported, [["promptTokenCount", "totalTokenCount"]]);
  assert.equal(meter.usage()?.input_tokens, 0);
  assert.equal(meter.usage()?.output_tokens, 2);
});

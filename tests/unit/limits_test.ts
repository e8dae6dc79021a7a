/** @module Pure limit helpers: windows, the token estimate and the 429 headers per protocol. */
import assert from "node:assert/strict";
import {
  estimateRequest,
  estimateRequestTokens,
  rateLimitHeaders,
  totalTokens,
  windowOf,
} from "../../src/access/limits.ts";

const AT = Date.parse("2026-02-28T23:59:30.500Z");

const WINDOWS = [
  {
    window: "minute",
    want: { id: "2026-02-28T23:59", start: "2026-02-28T23:59:00.000Z", end: "2026-03-01T00:00:00.000Z" },
  },
  { window: "day", want: { id: "2026-02-28", start: "2026-02-28T00:00:00.000Z", end: "2026-03-01T00:00:00.000Z" } },
  { window: "month", want: { id: "2026-02", start: "2026-02-01T00:00:00.000Z", end: "2026-03-01T00:00:00.000Z" } },
] as const;

for (const c of WINDOWS) {
  Deno.test(`windowOf() aligns a ${c.window} window to UTC`, () => {
    const got = windowOf(c.window, AT);
    assert.deepEqual(
      { id: got.id, start: new Date(got.start).toISOString(), end: new Date(got.end).toISOString() },
      c.want,
    );
  });
}

const ESTIMATES = [
  {
    name: "counts the prompt and max_tokens",
    body: { messages: [{ role: "user", content: "x".repeat(100) }], max_tokens: 50 },
    min: 75,
    max: 85,
  },
  {
    name: "reads OpenAI's max_completion_tokens",
    body: { messages: [], max_completion_tokens: 1000 },
    min: 1000,
    max: 1010,
  },
  {
    name: "reads the Responses input and max_output_tokens",
    body: { input: "y".repeat(400), max_output_tokens: 10 },
    min: 110,
    max: 120,
  },
  {
    name: "reads Gemini contents and generationConfig.maxOutputTokens",
    body: {
      contents: [{ role: "user", parts: [{ text: "z".repeat(400) }] }],
      generationConfig: { maxOutputTokens: 50 },
    },
    min: 150,
    max: 170,
  },
  { name: "ignores a bad cap", body: { messages: [], max_tokens: -5 }, min: 1, max: 10 },
];

for (const c of ESTIMATES) {
  Deno.test(`estimateRequestTokens() ${c.name}`, () => {
    const got = estimateRequestTokens(c.body);
    assert.ok(got >= c.min && got <= c.max, `estimate ${got} not in [${c.min}, ${c.max}]`);
  });
}

Deno.test("totalTokens() adds input, output and both cache kinds", () => {
  assert.equal(totalTokens(undefined), 0);
  const usage = { input_tokens: 1, output_tokens: 2, cache_read_input_tokens: 4, cache_creation_input_tokens: 8 };
  assert.equal(totalTokens(usage), 15);
});

Deno.test("rateLimitHeaders() gives Anthropic's headers and a retry-after in whole seconds", () => {
  const breach = { unit: "requests", limit: 5, used: 5, resetAt: AT + 29_500 } as const;
  assert.deepEqual(rateLimitHeaders(breach, "anthropic", AT), {
    "retry-after": "30",
    "anthropic-ratelimit-requests-limit": "5",
    "anthropic-ratelimit-requests-remaining": "0",
    "anthropic-ratelimit-requests-reset": "2026-03-01T00:00:00Z",
  });
});

Deno.test("rateLimitHeaders() gives OpenAI's x-ratelimit headers to OpenAI clients", () => {
  const breach = { unit: "tokens", limit: 100, used: 60, resetAt: AT + 1 } as const;
  assert.deepEqual(rateLimitHeaders(breach, "openai-chat", AT), {
    "retry-after": "1",
    "x-ratelimit-limit-tokens": "100",
    "x-ratelimit-remaining-tokens": "40",
    "x-ratelimit-reset-tokens": "1s",
  });
});

Deno.test("rateLimitHeaders() gives a budget only retry-after, and x-should-retry: false beyond a minute", () => {
  const breach = { unit: "cost", limit: 5e12, used: 6e12, resetAt: AT + 3_600_000 } as const;
  assert.deepEqual(rateLimitHeaders(breach, "anthropic", AT), { "retry-after": "3600", "x-should-retry": "false" });
  assert.deepEqual(rateLimitHeaders({ ...breach, resetAt: AT + 60_000 }, "openai-chat", AT), { "retry-after": "60" });
});

Deno.test("estimateRequest() splits the estimate into prompt and output for pricing", () => {
  const got = estimateRequest({ messages: [{ role: "user", content: "x".repeat(100) }], max_tokens: 50 });
  assert.equal(got.output, 50);
  assert.ok(got.prompt >= 25 && got.prompt <= 35, `prompt estimate ${got.prompt}`);
});

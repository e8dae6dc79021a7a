/** @module Cost as pure arithmetic: each token kind at its rate, exact decimal strings, estimates and highest prices. */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";
import type { Exchange, Usage } from "../../src/core/exchange.ts";
import { formatMoney, parseMoney, picoOf } from "../../src/core/money.ts";
import { costOf, estimateCost, highestPrices, isUnpriced } from "../../src/usage/cost.ts";
import { usageMeter } from "../../src/usage/meter.ts";

const PRICE = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };
const NONE: Usage = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };

const KINDS: { kind: keyof Usage; tokens: number; want: string }[] = [
  { kind: "input_tokens", tokens: 1_000, want: "0.003" },
  { kind: "output_tokens", tokens: 1_000, want: "0.015" },
  { kind: "cache_read_input_tokens", tokens: 1_000, want: "0.0003" },
  { kind: "cache_creation_input_tokens", tokens: 1_000, want: "0.00375" },
  // One token of a cache read costs 0.0000003: micro-units would round it away, pico-units keep it.
  { kind: "cache_read_input_tokens", tokens: 1, want: "0.0000003" },
];

for (const c of KINDS) {
  Deno.test(`costOf() prices ${c.tokens} ${c.kind} at its own rate: ${c.want}`, () => {
    assert.equal(formatMoney(costOf({ ...NONE, [c.kind]: c.tokens }, PRICE)), c.want);
  });
}

Deno.test("costOf() adds the four kinds, treats a missing rate as free, and no price as nothing", () => {
  const usage = {
    input_tokens: 1200,
    output_tokens: 800,
    cache_read_input_tokens: 150000,
    cache_creation_input_tokens: 20000,
  };
  assert.equal(formatMoney(costOf(usage, PRICE)), "0.1356");
  assert.equal(formatMoney(costOf(usage, { output: 15 })), "0.012");
  assert.equal(costOf(usage, undefined), 0n);
  assert.equal(costOf(undefined, PRICE), 0n);
});

const MONEY: [bigint, string][] = [
  [0n, "0"],
  [1n, "0.000000000001"],
  [8_400_000_000n, "0.0084"],
  [1_000_000_000_000n, "1"],
  [12_500_000_000_000n, "12.5"],
  [18_446_744_073_709_551_615n, "18446744.073709551615"],
];

for (const [pico, text] of MONEY) {
  Deno.test(`formatMoney() writes ${pico} pico-units as "${text}" and parseMoney() reads it back`, () => {
    assert.equal(formatMoney(pico), text);
    assert.equal(parseMoney(text), pico);
  });
}

Deno.test("parseMoney() refuses what formatMoney() never writes", () => {
  for (const text of ["", "-1", "1.", "1e3", "0.0000000000001", "abc"]) assert.equal(parseMoney(text), undefined, text);
});

Deno.test("picoOf() turns a budget with six decimals into exact pico-units", () => {
  assert.equal(picoOf(50), 50_000_000_000_000n);
  assert.equal(picoOf(0.000567), 567_000_000n);
  assert.equal(picoOf(10_000_000), 10_000_000_000_000_000_000n);
});

Deno.test("estimateCost() prices the prompt at the input rate and the output cap at the output rate", () => {
  assert.equal(formatMoney(estimateCost({ prompt: 1000, output: 2000 }, PRICE)), "0.033");
  assert.equal(estimateCost({ prompt: 1000, output: 2000 }, undefined), 0n);
});

Deno.test("highestPrices() takes each kind's highest rate among a model's deployments", () => {
  const config = parseConfig(
    `
upstreams:
  - { name: a, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [{ id: m, price: { input: 3, output: 10 } }, n] }
  - { name: b, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [{ id: m, price: { input: 2, output: 12, cache_read: 0.2 } }] }
  - { name: c, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [m] }
groups: [{ name: g, listing: anthropic, models: [m, n] }]
`,
    "t.yaml",
  );
  const prices = highestPrices(config);
  assert.deepEqual(prices.get("m"), { input: 3, output: 12, cache_read: 0.2 });
  assert.equal(prices.get("n"), undefined);
});

const EXCHANGE = { price: undefined, usage: { ...NONE, output_tokens: 5 } } as Exchange;

Deno.test("isUnpriced() is true only for tokens used at a deployment without a price", () => {
  assert.equal(isUnpriced(EXCHANGE), true);
  assert.equal(
    isUnpriced({ ...EXCHANGE, price: {} }),
    false,
    "an empty price is a free deployment, not an unpriced one",
  );
  assert.equal(isUnpriced({ ...EXCHANGE, usage: NONE }), false);
  assert.equal(isUnpriced({ ...EXCHANGE, usage: undefined }), false);
});

Deno.test("usageMeter() counts a compatible server's cache writes apart, so they get the cache-write rate", () => {
  const meter = usageMeter("openai-chat");
  meter.body({
    usage: {
      prompt_tokens: 100,
      completion_tokens: 7.9,
      prompt_tokens_details: { cached_tokens: 60, cache_creation_tokens: 30 },
    },
  });
  assert.deepEqual(meter.usage(), {
    input_tokens: 10,
    output_tokens: 7,
    cache_read_input_tokens: 60,
    cache_creation_input_tokens: 30,
  });
});

/** A garbled chat usage: 1,000 cache writes reported for a prompt of 100 tokens, 60 of them cache reads. */
const GARBLED_WRITES = [
  { name: "prompt_tokens_details.cache_creation_tokens", details: { cache_creation_tokens: 1000 }, top: {} },
  { name: "cache_creation_input_tokens", details: {}, top: { cache_creation_input_tokens: 1000 } },
];

for (const c of GARBLED_WRITES) {
  for (const stream of [false, true]) {
    Deno.test(`usageMeter() caps ${c.name} at the prompt left after cache reads${stream ? " in a stream" : ""}`, () => {
      const usage = {
        prompt_tokens: 100,
        completion_tokens: 7,
        prompt_tokens_details: { cached_tokens: 60, ...c.details },
        ...c.top,
      };
      const meter = usageMeter("openai-chat");
      if (stream) meter.event({ data: JSON.stringify({ id: "c", choices: [], usage }) });
      else meter.body({ usage });
      const recorded = meter.usage()!;
      assert.deepEqual(recorded, {
        input_tokens: 0,
        output_tokens: 7,
        cache_read_input_tokens: 60,
        cache_creation_input_tokens: 40,
      });
      // 60 * 0.3 + 40 * 3.75 + 7 * 15 per million: never more than the 100 prompt tokens could cost.
      assert.equal(formatMoney(costOf(recorded, PRICE)), "0.000273");
    });
  }
}

/** @module The config's `currency`, `price` on model entries of every upstream kind, and budgets: strict, named errors. */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";
import { routeTableFor } from "../_helpers.ts";

function config(model: string, top = "", limits = ""): string {
  return `${top}
upstreams:
  - { name: a, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [${model}] }
  - name: bed
    protocol: anthropic-bedrock
    region: us-east-1
    models: [{ id: b, upstream_id: anthropic.claude-x, price: { input: 3, output: 15 } }]
  - { name: vx, protocol: anthropic-vertex, project: p, region: global, models: [{ id: v, price: { cache_read: 0.3 } }] }
groups:
  - { name: g, listing: anthropic, models: [m]${limits} }
`;
}

const PRICED = "{ id: m, upstream_id: up, price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } }";

Deno.test("parseConfig() takes a price per model entry, a currency, and defaults the currency to USD", () => {
  const parsed = parseConfig(config(PRICED, "currency: EUR"), "t.yaml");
  assert.equal(parsed.currency, "EUR");
  assert.equal(parseConfig(config(PRICED), "t.yaml").currency, "USD");
  const table = routeTableFor(parsed, () => "key");
  assert.deepEqual(table.routes.get("m")?.[0].price, { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 });
  assert.deepEqual(table.routes.get("b")?.[0].price, { input: 3, output: 15 }, "a Bedrock model entry takes a price");
  assert.deepEqual(table.routes.get("v")?.[0].price, { cache_read: 0.3 }, "a Vertex model entry takes a price");
});

const ERRORS: { name: string; text: string; error: RegExp }[] = [
  {
    name: "a negative price",
    text: config("{ id: m, price: { input: -1 } }"),
    error: /upstreams\[0\]\.models\[0\]\.price\.input: Too small/,
  },
  {
    name: "a price that is a string",
    text: config('{ id: m, price: { output: "15" } }'),
    error: /upstreams\[0\]\.models\[0\]\.price\.output: .*expected number/,
  },
  {
    name: "a price with more than six decimals",
    text: config("{ id: m, price: { cache_read: 0.0000001 } }"),
    error: /upstreams\[0\]\.models\[0\]\.price\.cache_read: must have at most 6 decimal places/,
  },
  {
    name: "an unknown kind of price",
    text: config("{ id: m, price: { cache_hit: 0.3 } }"),
    error: /upstreams\[0\]\.models\[0\]\.price\.cache_hit: is not a known field$/,
  },
  {
    name: "a price that is not an object",
    text: config("{ id: m, price: 3 }"),
    error: /upstreams\[0\]\.models\[0\]\.price: /,
  },
  { name: "a currency that is not a label", text: config("m", 'currency: "US dollars"'), error: /currency: must be/ },
  {
    name: "a budget of zero",
    text: config("m", "", ", limits: { cost_per_day: 0 }"),
    error: /groups\[0\]\.limits\.cost_per_day: must be more than 0/,
  },
  {
    name: "a negative budget",
    text: config("m", "", ", limits: { cost_per_month: -5 }"),
    error: /groups\[0\]\.limits\.cost_per_month: /,
  },
  {
    name: "a budget that is a string",
    text: config("m", "", ', limits: { cost_per_month: "50 USD" }'),
    error: /groups\[0\]\.limits\.cost_per_month: .*expected number/,
  },
];

for (const c of ERRORS) {
  Deno.test(`parseConfig() refuses ${c.name}, naming the YAML path`, () => {
    assert.throws(() => parseConfig(c.text, "t.yaml"), c.error);
  });
}

Deno.test("parseConfig() takes budgets with cents and fractions of cents", () => {
  const parsed = parseConfig(config("m", "", ", limits: { cost_per_day: 12.5, cost_per_month: 0.000567 }"), "t.yaml");
  assert.deepEqual(parsed.groups[0].limits, { cost_per_day: 12.5, cost_per_month: 0.000567 });
});

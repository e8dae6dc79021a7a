/** @module The config's `limits:` on groups and its `usage:` section: strict, with errors naming the YAML path. */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";

function config(groupExtra: string, top = ""): string {
  return `
upstreams:
  - { name: a, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [m] }
groups:
  - { name: g, listing: anthropic, models: [m]${groupExtra} }
${top}`;
}

const CASES: { name: string; text: string; error?: RegExp }[] = [
  {
    name: "accepts every limit kind",
    text: config(", limits: { requests_per_minute: 1, tokens_per_minute: 2, tokens_per_day: 3, tokens_per_month: 4 }"),
  },
  {
    name: "refuses a misspelt limit",
    text: config(", limits: { request_per_minute: 5 }"),
    error: /groups\[0\]\.limits\.request_per_minute: is not a known field$/,
  },
  {
    name: "refuses a zero limit",
    text: config(", limits: { tokens_per_day: 0 }"),
    error: /groups\[0\]\.limits\.tokens_per_day: /,
  },
  {
    name: "refuses a fractional limit",
    text: config(", limits: { tokens_per_day: 1.5 }"),
    error: /groups\[0\]\.limits\.tokens_per_day: /,
  },
  {
    name: "refuses an unknown usage key",
    text: config("", "usage: { log_days: 3 }"),
    error: /usage\.log_days: is not a known field$/,
  },
  {
    name: "refuses a log kept zero days",
    text: config("", "usage: { request_log_days: 0 }"),
    error: /usage\.request_log_days: /,
  },
];

for (const c of CASES) {
  Deno.test(`parseConfig() ${c.name}`, () => {
    if (c.error) assert.throws(() => parseConfig(c.text, "t.yaml"), c.error);
    else {
      const parsed = parseConfig(c.text, "t.yaml");
      assert.deepEqual(parsed.groups[0].limits, {
        requests_per_minute: 1,
        tokens_per_minute: 2,
        tokens_per_day: 3,
        tokens_per_month: 4,
      });
      assert.deepEqual(parsed.usage, { request_log_days: 30, flush_ms: 1000, auth_refresh_ms: 500 });
    }
  });
}

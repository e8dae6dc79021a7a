/** @module Unit tests for config errors: each names the file, the YAML path and the problem. */
import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../src/core/config_load.ts";

const BASE = `upstreams:
  - name: a
    protocol: anthropic
    base_url: https://api.example.test/v1
    api_key_env: KEY
    models: [m]
groups:
  - { name: g, listing: anthropic, models: [m] }
`;

const CASES = [
  { name: "an unknown top-level key", yaml: BASE + "lisen: {}\n", want: /"cfg.yaml": lisen: is not a known field$/ },
  {
    name: "an unknown upstream key",
    yaml: BASE.replace("api_key_env", "apikey: x\n    api_key_env"),
    want: /upstreams\[0\]\.apikey: is not a known field$/,
  },
  {
    name: "a bad protocol",
    yaml: BASE.replace("protocol: anthropic", "protocol: grpc"),
    want: /upstreams\[0\]\.protocol/,
  },
  {
    name: "a bad base_url",
    yaml: BASE.replace("https://api.example.test/v1", "not a url"),
    want: /upstreams\[0\]\.base_url/,
  },
  {
    name: "a secret in place of an env name",
    yaml: BASE.replace("api_key_env: KEY", "api_key_env: sk-abc-123"),
    want: /upstreams\[0\]\.api_key_env/,
  },
  {
    name: "a group model no upstream serves",
    yaml: BASE.replace("models: [m] }", "models: [m, x] }"),
    want: /groups\[0\]\.models\[1\]: no upstream serves model "x"/,
  },
  {
    name: "a duplicate upstream",
    yaml: BASE.replace(
      "groups:",
      "  - { name: a, protocol: openai, base_url: http://127.0.0.1:1, api_key_env: K, models: [m] }\ngroups:",
    ),
    want: /upstreams\[1\]\.name: duplicate/,
  },
  { name: "a bad listing", yaml: BASE.replace("listing: anthropic", "listing: both"), want: /groups\[0\]\.listing/ },
  {
    name: "a negative weight",
    yaml: BASE.replace("models: [m]\n", "models: [m]\n    weight: -1\n"),
    want: /upstreams\[0\]\.weight/,
  },
  {
    name: "a native_custom_tools that is not a boolean",
    yaml: BASE.replace("models: [m]\n", "models: [m]\n    native_custom_tools: yes please\n"),
    want: /upstreams\[0\]\.native_custom_tools/,
  },
  {
    name: "an unknown routing key",
    yaml: BASE + "routing: { retries: 2 }\n",
    want: /routing\.retries: is not a known field$/,
  },
  {
    name: "an unknown retry budget key",
    yaml: BASE + "routing: { retry_budget: { percent: 20 } }\n",
    want: /routing\.retry_budget\.percent: is not a known field$/,
  },
  {
    name: "a negative retry budget ratio",
    yaml: BASE + "routing: { retry_budget: { ratio: -0.1 } }\n",
    want: /routing\.retry_budget\.ratio/,
  },
  {
    name: "a retry budget window under a second",
    yaml: BASE + "routing: { retry_budget: { window_ms: 10 } }\n",
    want: /routing\.retry_budget\.window_ms/,
  },
  {
    name: "a response store kept for no days",
    yaml: BASE + "responses_store: { days: 0 }\n",
    want: /responses_store\.days/,
  },
  {
    name: "a response chain of no turns",
    yaml: BASE + "responses_store: { max_chain_turns: 0 }\n",
    want: /responses_store\.max_chain_turns/,
  },
  {
    name: "an unknown response store key",
    yaml: BASE + "responses_store: { ttl: 3 }\n",
    want: /responses_store\.ttl: is not a known field$/,
  },
  {
    name: "a socket limit of no sockets per token",
    yaml: BASE + "responses_socket: { max_per_token: 0 }\n",
    want: /responses_socket\.max_per_token/,
  },
  {
    name: "an unknown socket key",
    yaml: BASE + "responses_socket: { timeout: 3 }\n",
    want: /responses_socket\.timeout: is not a known field$/,
  },
  {
    name: "an affinity pin life under a second",
    yaml: BASE + "routing: { affinity: { ttl_ms: 10 } }\n",
    want: /routing\.affinity\.ttl_ms/,
  },
  {
    name: "an unknown affinity key",
    yaml: BASE + "routing: { affinity: { ttl: 300 } }\n",
    want: /routing\.affinity\.ttl: is not a known field$/,
  },
  { name: "invalid YAML", yaml: "upstreams: [", want: /invalid YAML/ },
];
for (const c of CASES) {
  Deno.test(`parseConfig() refuses ${c.name}`, () => {
    assert.throws(() => parseConfig(c.yaml, "cfg.yaml"), (err: Error) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /^Cannot load config "cfg.yaml": /);
      assert.match(err.message, c.want);
      return true;
    });
  });
}

Deno.test("parseConfig() fills defaults and trims a trailing slash from base_url", () => {
  const config = parseConfig(BASE.replace("/v1", "/v1/"), "cfg.yaml");
  assert.equal(config.upstreams[0].base_url, "https://api.example.test/v1");
  assert.deepEqual(config.listen, { host: "127.0.0.1", port: 8787 });
  assert.equal(config.routing.max_attempts, 3);
  assert.deepEqual(config.routing.retry_budget, { ratio: 0.2, min_retries: 3, window_ms: 10_000 });
  const partial = parseConfig(BASE + "routing: { retry_budget: { ratio: 0 } }\n", "cfg.yaml");
  assert.deepEqual(partial.routing.retry_budget, { ratio: 0, min_retries: 3, window_ms: 10_000 });
  assert.deepEqual(config.routing.affinity, { enabled: true, ttl_ms: 300_000, sync_ms: 10_000 });
  assert.equal(config.max_body_bytes, 32 * 1024 * 1024);
  assert.equal(config.upstreams[0].priority, 0);
  assert.equal(config.upstreams[0].native_custom_tools, false, "freeform tools go as functions unless told otherwise");
  assert.deepEqual(config.responses_store, { enabled: true, days: 30, max_chain_turns: 100 });
  const off = parseConfig(BASE + "responses_store: { enabled: false }\n", "cfg.yaml");
  assert.deepEqual(off.responses_store, { enabled: false, days: 30, max_chain_turns: 100 });
});

Deno.test("the example config parses", () => {
  parseConfig(Deno.readTextFileSync(new URL("../../config/gateway.example.yaml", import.meta.url)), "example");
});

/** @module The demo upstream's config: its model ids say they are demo ones, and a production config refuses it. */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";

function config(upstream: string, top = ""): string {
  return `${top}
upstreams:
  - ${upstream}
groups:
  - { name: default, listing: anthropic, models: [demo-model] }
`;
}

const CASES: { name: string; yaml: string; error?: string }[] = [
  {
    name: "needs no key nor address",
    yaml: config("{ name: demo, protocol: demo, models: [demo-model] }"),
  },
  {
    name: "a model id without demo- is refused at its path",
    yaml: config("{ name: demo, protocol: demo, models: [demo-model, gpt-5] }"),
    error: 'upstreams[0].models[1]: must start with "demo-": a demo model says it is one',
  },
  {
    name: "an aliased model's id too",
    yaml: config(
      "{ name: demo, protocol: demo, models: [demo-model, { id: sonnet, upstream_id: demo-x }] }",
    ),
    error: 'upstreams[0].models[1].id: must start with "demo-"',
  },
  {
    name: "a key has no place on it",
    yaml: config(
      "{ name: demo, protocol: demo, api_key_env: KEY, models: [demo-model] }",
    ),
    error: "upstreams[0].api_key_env: ",
  },
  {
    name: "production: true refuses it",
    yaml: config(
      "{ name: try-me, protocol: demo, models: [demo-model] }",
      "production: true",
    ),
    error: 'upstreams[0].protocol: upstream "try-me" is the built-in demo, which a config with production: true ' +
      "refuses; remove it, and its models from the groups",
  },
];

for (const { name, yaml, error } of CASES) {
  Deno.test(`demo upstream config: ${name}`, () => {
    if (!error) {
      assert.equal(parseConfig(yaml, "g.yaml").upstreams[0].protocol, "demo");
      return;
    }
    assert.throws(
      () => parseConfig(yaml, "g.yaml"),
      (err: Error) => err.message.includes(`"g.yaml": ${error}`),
    );
  });
}

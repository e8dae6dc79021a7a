/** @module One rendering of a failed check's place: request bodies, the admin API and the config name a field alike. */
import assert from "node:assert/strict";
import { GroupCreate, parseInput } from "../../src/admin/schemas.ts";
import { parseConfig } from "../../src/core/config_load.ts";
import { GatewayError } from "../../src/core/errors.ts";
import { checkBody } from "../../src/protocols/checks.ts";
import { fieldPath } from "../../src/core/validation.ts";

const PATHS = [
  { path: [], want: "" },
  { path: ["model"], want: "model" },
  { path: ["messages", 0, "role"], want: "messages[0].role" },
  { path: ["models", 1], want: "models[1]" },
  { path: [0, "a"], want: "[0].a" },
  { path: ["groups", 1, "models", 0], want: "groups[1].models[0]" },
];
for (const c of PATHS) {
  Deno.test(`fieldPath() renders ${JSON.stringify(c.path)} as "${c.want}"`, () => {
    assert.equal(fieldPath(c.path), c.want);
  });
}

/** The `param` of the GatewayError `run` throws. */
function paramOf(run: () => unknown): string | null {
  try {
    run();
  } catch (err) {
    if (err instanceof GatewayError) return err.param;
    throw err;
  }
  throw new Error("no error was thrown");
}

Deno.test("a request body, an admin input and the config name an element of a list the same way", () => {
  const body = { model: "m", max_tokens: 8, messages: [{ content: "Hi" }] };
  assert.equal(paramOf(() => checkBody("anthropic", "generate", body)), "messages[0].role");
  const group = { name: "g", listing: "openai", models: ["a", 5] };
  assert.equal(paramOf(() => parseInput(GroupCreate, group)), "models[1]");
  const yaml = `upstreams:
  - { name: a, protocol: anthropic, base_url: "https://api.example.test/v1", api_key_env: KEY, models: [m] }
groups:
  - { name: g, listing: anthropic, models: [m, 5] }
`;
  assert.throws(() => parseConfig(yaml, "cfg.yaml"), /"cfg.yaml": groups\[0\]\.models\[1\]: /);
});

Deno.test("an unknown admin field is named as the field, in the same rendering", () => {
  const message = (() => {
    try {
      parseInput(GroupCreate, { name: "g", listing: "openai", models: [], limits: { tokens_per_year: 1 } });
    } catch (err) {
      return (err as GatewayError).message;
    }
  })();
  assert.equal(message, "limits.tokens_per_year: is not a known field");
});

/**
 * @module The body check's quick path: it takes only bodies its schema takes, so every other body still gets the
 * schema's 400 naming the field.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../src/core/errors.ts";
import type { JsonObject, Operation, Protocol } from "../../src/core/types.ts";
import { bodySchema, checkBody } from "../../src/protocols/checks.ts";

const BASES: [Protocol, Operation, JsonObject][] = [
  ["anthropic", "generate", { model: "m", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }],
  ["anthropic", "count_tokens", { model: "m", messages: [{ role: "user", content: [] }] }],
  ["openai-chat", "generate", { model: "m", messages: [{ role: "user", content: "Hi" }] }],
  ["openai-responses", "generate", { model: "m", input: "Hi" }],
  ["gemini", "generate", { model: "m", contents: [{ role: "user", parts: [] }] }],
];

/** Values that are wrong for some field and right for others. */
const VALUES: unknown[] = [
  undefined,
  null,
  "",
  "x",
  0,
  -1,
  1.5,
  8,
  2 ** 60,
  Infinity,
  true,
  "true",
  [],
  [[]],
  [null],
  [{}],
  [{ role: 5, content: "Hi" }],
  [{ role: "user" }],
  [{ role: "user", content: null }],
  [{ role: "user", content: "Hi" }, "x"],
  [{ role: "user", parts: [] }],
  [{ parts: "x" }],
  {},
  { role: "user", content: "Hi" },
];

for (const [protocol, operation, base] of BASES) {
  Deno.test(`checkBody() takes a ${protocol} ${operation} body exactly when its schema does`, () => {
    const schema = bodySchema(protocol, operation)!;
    const fields = [...new Set([...Object.keys(base), "model", "max_tokens", "stream", "messages", "input"])];
    let refused = 0;
    for (const field of fields) {
      for (const value of VALUES) {
        const body = { ...base, [field]: value };
        if (value === undefined) delete body[field];
        const want = schema.safeParse(body).success;
        try {
          assert.equal(checkBody(protocol, operation, body), body);
          assert.ok(want, `taken, but the schema refuses ${JSON.stringify(body)}`);
        } catch (err) {
          if (!(err instanceof GatewayError)) throw err;
          assert.ok(!want, `refused, but the schema takes ${JSON.stringify(body)}`);
          assert.equal(err.status, 400);
          assert.ok(err.param !== null);
          refused++;
        }
      }
    }
    assert.ok(refused > fields.length, `${refused} bodies refused`);
  });
}

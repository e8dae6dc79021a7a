/** @module geminiSchema(): JSON Schema into the subset the Gemini API accepts, case by case. */
import assert from "node:assert/strict";
import { GatewayError } from "../../src/core/errors.ts";
import { geminiSchema } from "../../src/translate/gemini_schema.ts";

const WHERE = { field: "tools[0].input_schema", tool: "Read" };

const CASES: { name: string; input: unknown; want: unknown }[] = [
  {
    name: "upper-cases types and keeps properties and required",
    input: { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
    want: { type: "OBJECT", properties: { a: { type: "STRING" } }, required: ["a"] },
  },
  {
    name: "leaves out keywords Gemini refuses",
    input: {
      $schema: "x",
      type: "object",
      additionalProperties: false,
      propertyNames: { pattern: "^a" },
      properties: { n: { type: "integer", multipleOf: 2, uniqueItems: true } },
    },
    want: { type: "OBJECT", properties: { n: { type: "INTEGER" } } },
  },
  {
    name: "makes a const a one-value enum",
    input: { const: "on" },
    want: { enum: ["on"], type: "STRING", format: "enum" },
  },
  {
    name: "pins a numeric const as a range",
    input: { type: "number", const: 3 },
    want: { type: "NUMBER", minimum: 3, maximum: 3 },
  },
  {
    name: "describes an enum of other values",
    input: { type: "integer", enum: [1, 2], description: "Level." },
    want: { type: "INTEGER", description: "Level. One of: 1, 2." },
  },
  {
    name: "inlines a $ref",
    input: { type: "object", properties: { p: { $ref: "#/definitions/P" } }, definitions: { P: { type: "boolean" } } },
    want: { type: "OBJECT", properties: { p: { type: "BOOLEAN" } } },
  },
  {
    name: "turns a type list with null into nullable",
    input: { type: ["string", "null"] },
    want: { type: "STRING", nullable: true },
  },
  {
    name: "turns a type list into anyOf",
    input: { type: ["string", "integer"] },
    want: { anyOf: [{ type: "STRING" }, { type: "INTEGER" }] },
  },
  {
    name: "turns oneOf into anyOf and a null branch into nullable",
    input: { oneOf: [{ type: "string" }, { type: "number" }, { type: "null" }] },
    want: { anyOf: [{ type: "STRING" }, { type: "NUMBER" }], nullable: true },
  },
  {
    name: "merges allOf",
    input: {
      allOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, {
        properties: { b: { type: "number" } },
        required: ["b"],
      }],
    },
    want: { type: "OBJECT", properties: { a: { type: "STRING" }, b: { type: "NUMBER" } }, required: ["a", "b"] },
  },
  {
    name: "makes exclusive bounds inclusive and keeps only formats Gemini knows",
    input: {
      type: "object",
      properties: { n: { type: "number", exclusiveMinimum: 0 }, u: { type: "string", format: "uri" } },
    },
    want: { type: "OBJECT", properties: { n: { type: "NUMBER", minimum: 0 }, u: { type: "STRING" } } },
  },
  {
    name: "rewrites array items",
    input: { type: "array", items: { type: "string", const: "x" }, minItems: 1 },
    want: { type: "ARRAY", minItems: 1, items: { type: "STRING", enum: ["x"], format: "enum" } },
  },
];

for (const c of CASES) {
  Deno.test(`geminiSchema() ${c.name}`, () => {
    assert.deepEqual(geminiSchema(c.input, WHERE), c.want);
  });
}

const REFUSED: { name: string; input: unknown; message: RegExp }[] = [
  {
    name: "a recursive $ref",
    input: { properties: { n: { $ref: "#" } } },
    message: /^tools\[0\]\.input_schema\.properties\.n\.properties\.n: \$ref "#" is recursive.*"Read"/,
  },
  {
    name: "a $ref to nothing",
    input: { properties: { n: { $ref: "#/$defs/none" } } },
    message: /^tools\[0\]\.input_schema\.properties\.n: \$ref "#\/\$defs\/none" points at nothing/,
  },
  {
    name: "a remote $ref",
    input: { $ref: "https://example.com/s.json" },
    message: /points outside the schema/,
  },
  {
    name: "a required name without a schema",
    input: { type: "object", properties: {}, required: ["path"], additionalProperties: { type: "string" } },
    message: /^tools\[0\]\.input_schema: required names "path", which has no schema/,
  },
];

for (const c of REFUSED) {
  Deno.test(`geminiSchema() refuses ${c.name} with a 400 naming the tool and path`, () => {
    assert.throws(() => geminiSchema(c.input, WHERE), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 400);
      assert.match(err.message, c.message);
      return true;
    });
  });
}

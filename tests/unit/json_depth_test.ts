/** @module checkJsonDepth(): the nesting of arrays and objects counted from the text, brackets in strings left out. */
import assert from "node:assert/strict";
import { checkJsonDepth } from "../../src/core/json_depth.ts";

const CASES: Array<{ text: string; depth: number }> = [
  { text: '"just a string"', depth: 0 },
  { text: "[]", depth: 1 },
  { text: '{"a":[{"b":[]}]}', depth: 4 },
  { text: "[[1],[2],[3]]", depth: 2 },
  { text: '{"a":"[[[[{{{{"}', depth: 1 },
  { text: '{"a":"a \\" [[[[ \\" b"}', depth: 1 },
  { text: '{"a":"ends in a backslash \\\\"}', depth: 1 },
  { text: '{"a\\\\":[["\\\\\\"["]]}', depth: 3 },
  { text: '{"é🙂":[["[ü]"]]}', depth: 3 },
  { text: ` { "a" : [ [ ] ] } `, depth: 3 },
];

for (const { text, depth } of CASES) {
  Deno.test(`checkJsonDepth() reads ${text.trim()} as ${depth} deep`, () => {
    assert.equal(JSON.stringify(JSON.parse(text)) !== undefined, true, "the case is JSON");
    checkJsonDepth(text, "Request body", depth);
    if (depth === 0) return;
    assert.throws(() => checkJsonDepth(text, "Request body", depth - 1), (err: Error & { status: number }) => {
      assert.equal(err.status, 400);
      assert.equal(
        err.message,
        `Request body nests arrays and objects more than ${depth - 1} levels deep; ` +
          `the gateway accepts at most ${depth - 1}`,
      );
      return true;
    });
  });
}

Deno.test("checkJsonDepth() leaves a text it cannot read to the parser", () => {
  for (const text of ['{"a":"unterminated [[[[', "[[", "]]]]{{"]) checkJsonDepth(text, "Request body", 2);
});

/** @module Unit tests for the order in which upstreams are tried. */
import assert from "node:assert/strict";
import { orderCandidates } from "../../src/relay/select.ts";

const C = (name: string, priority: number, weight = 1) => ({ name, priority, weight });

const CASES = [
  { name: "puts higher priority first", input: [C("low", 0), C("high", 5)], draws: [0, 0], want: ["high", "low"] },
  {
    name: "keeps a tier before a lower one whatever the draw",
    input: [C("a", 1), C("b", 0), C("c", 1)],
    draws: [0.99, 0.99, 0],
    want: ["c", "a", "b"],
  },
  {
    name: "picks by weight within a tier (low draw)",
    input: [C("a", 0, 1), C("b", 0, 3)],
    draws: [0.2, 0],
    want: ["a", "b"],
  },
  {
    name: "picks by weight within a tier (high draw)",
    input: [C("a", 0, 1), C("b", 0, 3)],
    draws: [0.3, 0],
    want: ["b", "a"],
  },
  { name: "returns a single candidate as is", input: [C("only", 0)], draws: [0.5], want: ["only"] },
];

for (const c of CASES) {
  Deno.test(`orderCandidates() ${c.name}`, () => {
    const draws = [...c.draws];
    assert.deepEqual(orderCandidates(c.input, () => draws.shift() ?? 0).map((x) => x.name), c.want);
  });
}

Deno.test("orderCandidates() spreads first picks by weight", () => {
  let seed = 42;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const firsts: Record<string, number> = { a: 0, b: 0 };
  for (let i = 0; i < 4000; i++) firsts[orderCandidates([C("a", 0, 1), C("b", 0, 3)], random)[0].name]++;
  assert.ok(firsts.b / 4000 > 0.7 && firsts.b / 4000 < 0.8, `b first ${firsts.b} of 4000`);
});

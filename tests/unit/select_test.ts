/** @module Unit tests for the order in which upstreams are tried, a session pin included. */
import assert from "node:assert/strict";
import { leadWith, orderCandidates, sharesTier } from "../../src/relay/select.ts";

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

const LEAD_CASES = [
  {
    name: "moves the pinned candidate to the front of a one-tier order",
    input: [C("a", 0), C("b", 0), C("c", 0)],
    pinned: "c",
    want: ["c", "a", "b"],
  },
  {
    name: "keeps a higher tier before a pinned candidate of a lower one",
    input: [C("top", 1), C("a", 0), C("b", 0)],
    pinned: "b",
    want: ["top", "b", "a"],
  },
  {
    name: "leaves the order alone when nothing is pinned",
    input: [C("a", 0), C("b", 0)],
    pinned: "x",
    want: ["a", "b"],
  },
  { name: "leaves a pinned candidate already first", input: [C("a", 0), C("b", 0)], pinned: "a", want: ["a", "b"] },
];

for (const c of LEAD_CASES) {
  Deno.test(`leadWith() ${c.name}`, () => {
    assert.deepEqual(leadWith(c.input, (x) => x.name === c.pinned).map((x) => x.name), c.want);
  });
}

Deno.test("sharesTier() is true only when some priority holds two candidates", () => {
  assert.equal(sharesTier([C("a", 0), C("b", 0)]), true);
  assert.equal(sharesTier([C("a", 1), C("b", 0), C("c", 0)]), true);
  assert.equal(sharesTier([C("a", 1), C("b", 0)]), false);
  assert.equal(sharesTier([C("a", 0)]), false);
});

/** @module The benchmark's command-line flags and its estimate of how long a run takes. */
import assert from "node:assert/strict";
import { estimateSeconds, parseBenchArgs } from "../../bench/options.ts";

const CASES = [
  {
    name: "gives the full defaults with no flags",
    args: [],
    want: { duration: 10, warmup: 2, repeats: 2, concurrency: [1, 16, 64], soak: 100_000, ttfbSamples: 500 },
  },
  {
    name: "shortens everything but the repeats with --quick",
    args: ["--quick"],
    want: { duration: 1, warmup: 1, repeats: 2, concurrency: [1, 16, 64], soak: 20_000, ttfbSamples: 100 },
  },
  {
    name: "lets explicit flags win over --quick wherever they stand",
    args: ["--duration", "3", "--quick", "--concurrency", "8,32", "--repeats", "1"],
    want: { duration: 3, warmup: 1, repeats: 1, concurrency: [8, 32], soak: 20_000, ttfbSamples: 100 },
  },
];

for (const c of CASES) {
  Deno.test(`parseBenchArgs() ${c.name}`, () => {
    const options = parseBenchArgs(c.args)!;
    const { duration, warmup, repeats, concurrency, soak, ttfbSamples } = options;
    assert.deepEqual({ duration, warmup, repeats, concurrency, soak, ttfbSamples }, c.want);
  });
}

const BAD = [
  { name: "a non-number duration", args: ["--duration", "ten"], error: /--duration: "ten"/ },
  { name: "a zero repeat count", args: ["--repeats", "0"], error: /--repeats: "0" is not a whole number >= 1/ },
  { name: "a fractional concurrency", args: ["--concurrency", "1,2.5"], error: /--concurrency: "2.5"/ },
  { name: "an unknown case", args: ["--cases", "messages,chat"], error: /unknown case "chat"/ },
  { name: "an unknown flag", args: ["--fast"], error: /Unknown flag "--fast"/ },
  { name: "--out without a path", args: ["--out"], error: /--out: give a file path/ },
];

for (const c of BAD) {
  Deno.test(`parseBenchArgs() refuses ${c.name}`, () => {
    assert.throws(() => parseBenchArgs(c.args), c.error);
  });
}

Deno.test("parseBenchArgs() measures the floor proxy unless --no-floor", () => {
  assert.equal(parseBenchArgs([])!.floor, true);
  assert.equal(parseBenchArgs(["--quick", "--no-floor"])!.floor, false);
});

Deno.test("parseBenchArgs() returns undefined for --help", () => {
  assert.equal(parseBenchArgs(["--quick", "--help"]), undefined);
});

Deno.test("estimateSeconds() keeps a quick run near two minutes and a full run under a quarter hour", () => {
  const quick = estimateSeconds(parseBenchArgs(["--quick"])!, 4);
  const full = estimateSeconds(parseBenchArgs([])!, 4);
  assert.ok(quick > 45 && quick < 150, `quick ${quick}`);
  assert.ok(full > 480 && full < 900, `full ${full}`);
});

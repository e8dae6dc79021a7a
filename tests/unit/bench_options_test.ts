/** @module The benchmark's command-line flags and its estimate of how long a run takes. */
import assert from "node:assert/strict";
import { estimateSeconds, parseBenchArgs } from "../../bench/options.ts";
import { CASES as CASES_RUN } from "../../bench/setup.ts";

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

Deno.test("estimateSeconds() keeps a quick run near five minutes and a full run under twenty-five", () => {
  const quick = estimateSeconds(parseBenchArgs(["--quick"])!, CASES_RUN);
  const full = estimateSeconds(parseBenchArgs([])!, CASES_RUN);
  assert.ok(quick > 90 && quick < 330, `quick ${quick}`);
  assert.ok(full > 600 && full < 1500, `full ${full}`);
});

Deno.test("estimateSeconds() counts a case measured at one concurrency once per repeat, not once per concurrency", () => {
  const args = ["--no-floor", "--open-streams", "0", "--body-rounds", "0"];
  const options = { ...parseBenchArgs(args)!, warmup: 0, soak: 0 };
  const long = { name: "long_stream", stream: true, concurrency: 4, events: 2000 };
  const messages = { name: "messages", stream: false };
  // Two sides (direct, gateway), two repeats, 10.3 s each, plus 18 s of start-up and idle and 10 s of the tool loop.
  assert.equal(estimateSeconds(options, [long]), 2 * 2 * 10.3 + 18 + 10);
  assert.equal(estimateSeconds(options, [messages]), 3 * 2 * 2 * 10.3 + 18 + 10);
  // With the floor, the long stream is also measured through the floor's bare JS relay variant.
  const withFloor = { ...options, floor: true };
  assert.equal(estimateSeconds(withFloor, [long]), 4 * 2 * 10.3 + 18 + 10);
});

Deno.test("parseBenchArgs() runs one round of large bodies by default and none with --body-rounds 0", () => {
  assert.equal(parseBenchArgs(["--quick"])!.bodyRounds, 1);
  assert.equal(parseBenchArgs(["--body-rounds", "0"])!.bodyRounds, 0);
  assert.throws(() => parseBenchArgs(["--body-rounds", "x"]), /--body-rounds/);
});

Deno.test("parseBenchArgs() runs 512 open streams by default and none with --open-streams 0", () => {
  assert.equal(parseBenchArgs(["--quick"])!.openStreams, 512);
  assert.equal(parseBenchArgs(["--open-streams", "0"])!.openStreams, 0);
  assert.throws(() => parseBenchArgs(["--open-streams", "-1"]), /--open-streams/);
});

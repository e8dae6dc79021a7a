/** @module The benchmark's command-line flags, their defaults for a full and a `--quick` run, and its time budget. */

/** How one benchmark run is shaped. */
export interface BenchOptions {
  /** Seconds of each measured load run. */
  duration: number;
  /** Seconds of load before a case's first measured run. */
  warmup: number;
  repeats: number;
  concurrency: number[];
  /** Requests of the mixed soak that checks the gateway's RSS; the first checkpoint is a tenth of it. */
  soak: number;
  /** Sequential streamed requests per side for time to first byte. */
  ttfbSamples: number;
  /** Concurrent paced streams of the many-open-streams case; 0 skips it. */
  openStreams: number;
  /** Fresh gateways per large-bodies case (ten 20 MB bodies at once, as bench:bodies); 0 skips it. */
  bodyRounds: number;
  /** Case names to run; empty for all. */
  cases: string[];
  pin: boolean;
  /** Whether the floor proxy (a bare fetch relay) is measured beside the gateway. */
  floor: boolean;
  /** Directory for the gateway's V8 CPU profile; the gateway then runs under --cpu-prof. */
  profileDir?: string;
  /** Where the JSON result goes; defaults to bench/results/<time>.json. */
  out?: string;
}

const FULL: BenchOptions = {
  duration: 10,
  warmup: 2,
  repeats: 2,
  concurrency: [1, 16, 64],
  soak: 100_000,
  ttfbSamples: 500,
  openStreams: 512,
  bodyRounds: 1,
  cases: [],
  pin: true,
  floor: true,
};

const QUICK: Partial<BenchOptions> = { duration: 1, warmup: 1, soak: 20_000, ttfbSamples: 100 };

/** The case names the benchmark knows. */
export const CASE_NAMES = [
  "messages",
  "messages_stream",
  "translated",
  "translated_stream",
  "responses",
  "responses_stream",
  "translated_responses",
  "translated_responses_stream",
  "embeddings",
  "guardrails_off",
  "guardrails_off_stream",
  "guardrails_on",
  "guardrails_on_stream",
  "long_stream",
];

/** The cases the floor proxy is measured for: the passthrough ones, whose targets compare the gateway with it. */
export const FLOOR_CASE_NAMES = [
  "messages",
  "messages_stream",
  "responses",
  "responses_stream",
  "embeddings",
  "long_stream",
];

/**
 * The cases the floor's bare JS relay variant is measured for: the long stream's CPU per event is judged against it,
 * and the two passthrough streams show what reading and re-sending their chunks in JS costs, nothing else done.
 */
export const JS_RELAY_CASE_NAMES = ["long_stream", "messages_stream", "responses_stream"];

/** Usage text for --help. */
export const USAGE = `Usage: deno task bench [--quick] [options]

  --quick               about 90 s: 1 s runs, a 20,000-request soak, 100 TTFB samples
  --duration S          seconds per measured run (default 10; wrk takes whole seconds)
  --warmup S            seconds of warm-up per case (default 2)
  --repeats N           repeats of every run, for the spread (default 2)
  --concurrency LIST    connections, comma-separated (default 1,16,64)
  --soak N              requests of the RSS soak; RSS is read after N/10 and N (default 100000)
  --ttfb-samples N      sequential streamed requests per side for TTFB (default 500)
  --open-streams N      concurrent paced streams of the open-streams case, 0 to skip (default 512)
  --body-rounds N       fresh gateways per large-bodies case (ten 20 MB bodies at once), 0 to skip (default 1)
  --cases LIST          some of ${CASE_NAMES.join(",")} (default all)
  --no-pin              do not pin processes to cores
  --no-floor            skip the floor proxy (a bare fetch relay measured beside the gateway)
  --profile DIR         run the gateway under --cpu-prof and write its profile to DIR
  --out FILE            JSON result path (default bench/results/<time>.json)`;

function positiveInt(flag: string, value: string | undefined, min = 1): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < min) {
    throw new RangeError(`Cannot read ${flag}: "${value ?? ""}" is not a whole number >= ${min}`);
  }
  return n;
}

/** Parses the flags; throws RangeError naming the flag on bad input. Returns undefined for --help. */
export function parseBenchArgs(args: readonly string[]): BenchOptions | undefined {
  const options: BenchOptions = { ...FULL, concurrency: [...FULL.concurrency], cases: [] };
  if (args.includes("--quick")) Object.assign(options, QUICK);
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    const value = () => args[++i];
    switch (flag) {
      case "--help":
      case "-h":
        return undefined;
      case "--quick":
        break;
      case "--duration":
        options.duration = positiveInt(flag, value());
        break;
      case "--warmup":
        options.warmup = positiveInt(flag, value(), 0);
        break;
      case "--repeats":
        options.repeats = positiveInt(flag, value());
        break;
      case "--concurrency":
        options.concurrency = (value() ?? "").split(",").map((c) => positiveInt(flag, c));
        break;
      case "--soak":
        options.soak = positiveInt(flag, value(), 0);
        break;
      case "--ttfb-samples":
        options.ttfbSamples = positiveInt(flag, value());
        break;
      case "--open-streams":
        options.openStreams = positiveInt(flag, value(), 0);
        break;
      case "--body-rounds":
        options.bodyRounds = positiveInt(flag, value(), 0);
        break;
      case "--cases": {
        options.cases = (value() ?? "").split(",");
        const unknown = options.cases.find((c) => !CASE_NAMES.includes(c));
        if (unknown !== undefined) throw new RangeError(`Cannot read --cases: unknown case "${unknown}"`);
        break;
      }
      case "--no-pin":
        options.pin = false;
        break;
      case "--no-floor":
        options.floor = false;
        break;
      case "--profile":
        options.profileDir = value();
        if (!options.profileDir) throw new RangeError("Cannot read --profile: give a directory");
        break;
      case "--out":
        options.out = value();
        if (!options.out) throw new RangeError("Cannot read --out: give a file path");
        break;
      default:
        throw new RangeError(`Unknown flag "${flag}"\n\n${USAGE}`);
    }
  }
  return options;
}

/** What the time estimate needs of a case. */
export interface EstimatedCase {
  name: string;
  stream: boolean;
  /** Its only concurrency, when it has one. */
  concurrency?: number;
  /** Events per stream: such a case has no time-to-first-byte samples. */
  events?: number;
}

/**
 * Seconds the run should take at most: every load run, warm-up and soak at a pessimistic rate, plus
 * start-up. The benchmark stops itself past twice this.
 */
export function estimateSeconds(options: BenchOptions, cases: readonly EstimatedCase[]): number {
  const jsRelayOf = (c: EstimatedCase) => options.floor ? Number(JS_RELAY_CASE_NAMES.includes(c.name)) : 0;
  const sidesOf = (c: EstimatedCase) =>
    2 + (options.floor ? Number(FLOOR_CASE_NAMES.includes(c.name)) : 0) + jsRelayOf(c);
  const sides = cases.reduce((n, c) => n + sidesOf(c), 0);
  // The JS relay runs at one concurrency only (see run.ts).
  const runs = cases.reduce(
    (n, c) => n + (sidesOf(c) - jsRelayOf(c)) * (c.concurrency ? 1 : options.concurrency.length) + jsRelayOf(c),
    0,
  );
  const warmups = sides * options.warmup;
  const soak = options.soak / 1000;
  const ttfbSides = cases.filter((c) => c.stream && !c.events).reduce((n, c) => n + sidesOf(c) - jsRelayOf(c), 0);
  const ttfb = (ttfbSides * options.ttfbSamples) / 300;
  // Per side: a fresh process, a warm-up, and a wave of paced streams lasting several seconds.
  const openStreams = options.openStreams > 0 ? (options.floor ? 2 : 1) * 25 : 0;
  // The tool loop: a few seconds of 20-turn loops over a socket and over HTTP.
  const toolLoop = 10;
  // Two cases of fresh gateways, each taking 200 MB of bodies; and the idle wait at the start.
  const bodies = 2 * options.bodyRounds * 15;
  return runs * options.repeats * (options.duration + 0.3) + warmups + soak + ttfb + openStreams + toolLoop + bodies +
    18;
}

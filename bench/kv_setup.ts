/**
 * @module The set-up of `deno task bench:kv`: its options, the config and tokens of a run, gateway processes on one
 * KV file with the round-trip seam on, and the KV figures each process's /metrics page gives.
 */
import type { ProcessSet, Started } from "./processes.ts";
import { ROOT } from "./setup.ts";

/** What a run measures. */
export interface KvBenchOptions {
  /** Milliseconds every KV call waits, as on a remote KV. */
  rtt: number;
  /** Instance counts of the many-instances case. */
  instances: number[];
  /** Whole minutes each many-instances case drives. */
  minutes: number;
  /** Seconds of sequential requests per token in the latency case. */
  seconds: number;
}

export const USAGE = `Usage: deno task bench:kv [--kv-rtt MS] [--instances 1,2,4,8] [--minutes N] [--seconds N]
  --kv-rtt MS        every KV call waits MS (default 20), through the test seam MODELGATE_KV_RTT_MS
  --instances LIST   gateway processes of the many-instances case (default 1,2,4,8)
  --minutes N        whole minutes each many-instances case drives 1,200 requests a minute (default 2)
  --seconds N        seconds of sequential requests per token in the latency case (default 10)`;

/** The options, or undefined when they do not parse. */
export function parseKvArgs(args: readonly string[]): KvBenchOptions | undefined {
  const options: KvBenchOptions = { rtt: 20, instances: [1, 2, 4, 8], minutes: 2, seconds: 10 };
  for (let i = 0; i < args.length; i += 2) {
    const value = args[i + 1];
    if (value === undefined) return undefined;
    if (args[i] === "--kv-rtt") options.rtt = Number(value);
    else if (args[i] === "--instances") options.instances = value.split(",").map(Number);
    else if (args[i] === "--minutes") options.minutes = Number(value);
    else if (args[i] === "--seconds") options.seconds = Number(value);
    else return undefined;
  }
  const whole = (n: number) => Number.isInteger(n) && n > 0;
  if (!(options.rtt >= 0) || !options.instances.every(whole) || !whole(options.minutes) || !whole(options.seconds)) {
    return undefined;
  }
  return options;
}

/**
 * The config of a run: a priced model, a group with a day budget (the latency case's token adds its own limits),
 * an unlimited group, and `capped` at 600 requests a minute. Written into `dir`; returns its path.
 */
export async function configYaml(dir: string, upstreamUrl: string): Promise<string> {
  const path = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(
    path,
    `listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(`${dir}/bench.kv`)}
log: { level: warn }
upstreams:
  - name: bench-anthropic
    protocol: anthropic
    base_url: "${upstreamUrl}/v1"
    api_key_env: BENCH_UPSTREAM_KEY
    models:
      - { id: bench-claude, price: { input: 3, output: 15 } }
groups:
  - { name: limited, listing: anthropic, models: [bench-claude], limits: { cost_per_day: 100000 } }
  - { name: open, listing: anthropic, models: [bench-claude] }
  - { name: capped, listing: anthropic, models: [bench-claude], limits: { requests_per_minute: 600 } }
`,
  );
  return path;
}

function env(dir: string, rtt?: number): Record<string, string> {
  return {
    MODELGATE_KV: `${dir}/bench.kv`,
    BENCH_UPSTREAM_KEY: "bench-upstream-key",
    NO_COLOR: "1",
    ...rtt === undefined ? {} : { MODELGATE_KV_RTT_MS: String(rtt) },
  };
}

function permissions(dir: string): string[] {
  return ["--allow-net=127.0.0.1", "--allow-env", "--allow-read", `--allow-write=${dir}`];
}

/** A token of `group` made with the CLI (limit flags as the CLI takes them); returns its secret. */
export async function createToken(dir: string, config: string, group: string, limits: string[]): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions(dir), "main.ts", "token", "create", "--group", group, ...limits, "--config", config],
    cwd: ROOT,
    env: env(dir),
    stdin: "null",
  }).output();
  const token = new TextDecoder().decode(output.stdout).trim();
  if (!output.success || !token) throw new Error(`Cannot create a token: ${new TextDecoder().decode(output.stderr)}`);
  return token;
}

/** Gateway processes on one KV file. */
export interface Cluster {
  urls: string[];
  stop(): Promise<void>;
}

/** Starts `instances` gateways on the run's KV file with every KV call delayed by `rtt` ms. */
export async function startCluster(
  processes: ProcessSet,
  options: { dir: string; config: string; instances: number; rtt: number },
): Promise<Cluster> {
  const started: Started[] = [];
  const urls: string[] = [];
  try {
    for (let i = 0; i < options.instances; i++) {
      const process = processes.start(
        `gateway ${i + 1}`,
        Deno.execPath(),
        ["run", ...permissions(options.dir), `${ROOT}main.ts`, "serve", "--config", options.config],
        { env: env(options.dir, options.rtt) },
      );
      started.push(process);
      const [, url] = await process.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
      urls.push(url);
    }
  } catch (err) {
    await Promise.all(started.map((process) => processes.stop(process)));
    throw err;
  }
  return { urls, stop: async () => void await Promise.all(started.map((process) => processes.stop(process))) };
}

/** The KV figures of every instance's /metrics, added up. */
export interface KvFigures {
  commits: number;
  trips: number;
  shareWrites: number;
  conflicts: number;
  giveUps: number;
}

/** Adds up the samples of `name` on a Prometheus page whose labels contain `labels`. */
export function sumMetric(page: string, name: string, labels = ""): number {
  let total = 0;
  for (const line of page.split("\n")) {
    if (!line.startsWith(name) || line.startsWith("#")) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith("{") || rest.startsWith(" "))) continue;
    if (labels && !rest.includes(labels)) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/** Reads the KV figures of every instance. */
export async function scrape(urls: readonly string[]): Promise<KvFigures> {
  const figures: KvFigures = { commits: 0, trips: 0, shareWrites: 0, conflicts: 0, giveUps: 0 };
  for (const url of urls) {
    const page = await (await fetch(`${url}/metrics`)).text();
    figures.commits += sumMetric(page, "modelgate_kv_calls_total", 'call="commit"');
    figures.trips += sumMetric(page, "modelgate_kv_calls_total");
    figures.shareWrites += sumMetric(page, "modelgate_limit_share_kv_writes_total");
    figures.conflicts += sumMetric(page, "modelgate_limit_share_conflicts_total");
    figures.giveUps += sumMetric(page, "modelgate_kv_write_give_ups_total");
  }
  return figures;
}

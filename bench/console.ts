/**
 * @module `deno task bench:console`: how fast the console's pages answer with a busy week in the log. It writes
 * 10,000 requests (20 tokens, 4 models, 200 sessions, a few failures, spread over seven days) into a fresh KV file
 * through the usage recorder, serves the gateway on 127.0.0.1, signs in, and times every page over real HTTP.
 */
import process from "node:process";
import { openStore, seedGroups } from "../src/access/store.ts";
import { createApp } from "../src/app.ts";
import { parseConfig } from "../src/core/config_load.ts";
import type { Exchange } from "../src/core/exchange.ts";
import { buildDeps } from "../src/serve/deps.ts";
import { usageRecorder } from "../src/usage/recorder.ts";

const REQUESTS = Number(Deno.env.get("BENCH_REQUESTS") ?? 10_000);
const RUNS = 30;
const ADMIN_KEY = "bench-admin-key-0123456789-abcdefghij";
const MODELS = ["claude-sonnet-4-5", "claude-haiku-4-5", "gpt-4.1", "gpt-4.1-mini"];

const CONFIG = `
kv_path: unused
upstreams:
  - name: anthropic
    protocol: anthropic
    base_url: "http://127.0.0.1:9/v1"
    api_key_env: BENCH_KEY
    models:
      - { id: claude-sonnet-4-5, price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } }
      - { id: claude-haiku-4-5, price: { input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 } }
  - { name: anthropic-backup, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: BENCH_KEY, models: [claude-sonnet-4-5] }
  - { name: openai, protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key_env: BENCH_KEY, models: [gpt-4.1, gpt-4.1-mini] }
groups:
  - { name: default, listing: auto, models: [claude-sonnet-4-5, claude-haiku-4-5, gpt-4.1, gpt-4.1-mini] }
  - { name: interns, listing: anthropic, models: [claude-haiku-4-5], limits: { tokens_per_day: 2000000 } }
`;

/** The i-th of the week's requests: newest first, one every 7 days / REQUESTS. */
function exchange(i: number, now: number, tokens: string[]): Exchange {
  const status = i % 50 === 7 ? 529 : i % 100 === 3 ? 429 : 200;
  return {
    request_id: `req_${String(i).padStart(8, "0")}`,
    started_at: now - Math.floor((i * 7 * 86_400_000) / REQUESTS),
    method: "POST",
    route: "/v1/messages",
    protocol: "anthropic",
    token_id: tokens[i % tokens.length],
    group: i % 5 === 0 ? "interns" : "default",
    model: MODELS[(i * 7) % MODELS.length],
    upstream: "anthropic",
    price: i % 2 === 0 ? { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } : undefined,
    session_id: `3f1c2d3e-0000-4000-8000-${String(i % 200).padStart(12, "0")}`,
    stream: i % 3 === 0,
    attempts: [],
    status,
    error: status === 200 ? undefined : status === 429 ? "rate_limit" : "overloaded",
    duration_ms: 400 + (i % 3000),
    ttfb_ms: 120 + (i % 400),
    usage: status === 200
      ? {
        input_tokens: 200 + (i % 4000),
        output_tokens: 50 + (i % 900),
        cache_read_input_tokens: i % 4 === 0 ? 12_000 : 0,
        cache_creation_input_tokens: i % 40 === 0 ? 3_000 : 0,
      }
      : undefined,
    usage_complete: status === 200,
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function main(): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-console-bench-" });
  const store = await openStore(`${dir}/bench.kv`);
  try {
    const config = parseConfig(CONFIG, "bench.yaml");
    await seedGroups(store, config.groups);
    const tokens: string[] = [];
    for (let i = 0; i < 20; i++) {
      tokens.push((await store.createToken({ group: "default", name: `user-${i}` })).record.id);
    }
    const now = Date.now();
    const recorder = usageRecorder(store.kv, { flushMs: 60_000, logDays: 30, log: console.error });
    const started = performance.now();
    for (let i = 0; i < REQUESTS; i++) recorder.finish!(exchange(i, now, tokens));
    await recorder.close();
    console.log(`Wrote ${REQUESTS} requests into a KV file in ${Math.round(performance.now() - started)} ms`);
    const [load] = Deno.loadavg();
    if (load > 0.5) console.log(`Note: load average ${load.toFixed(1)}: other work shares this machine`);

    const env: Record<string, string> = { BENCH_KEY: "unused", MODELGATE_ADMIN_KEY: ADMIN_KEY };
    const deps = buildDeps(config, store, { env: (name) => env[name], log: () => {} });
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, createApp(deps));
    const url = `http://127.0.0.1:${server.addr.port}`;
    const login = await fetch(`${url}/ui/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: url },
      body: new URLSearchParams({ key: ADMIN_KEY }),
    });
    await login.body?.cancel();
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const pages = [
      "/ui/",
      "/ui/tokens",
      `/ui/tokens/${tokens[3]}`,
      "/ui/groups",
      "/ui/usage?by=token",
      "/ui/usage?by=model",
      "/ui/usage?by=session",
      "/ui/usage?by=day",
      "/ui/usage.csv?by=session",
      "/ui/requests",
      `/ui/requests?token=${tokens[5]}`,
      "/ui/requests?status=529",
      "/ui/requests?status=404",
      "/ui/requests?session=3f1c2d3e-0000-4000-8000-000000000042",
      "/ui/requests?limit=500",
      "/ui/upstreams",
    ];
    console.log(
      `\nEach page loaded ${
        RUNS + 3
      } times, one at a time: milliseconds to the last byte of the first load and of the\n` +
        `last ${RUNS} (p50, p95, max), and CPU milliseconds per load of those ${RUNS}\n`,
    );
    console.log(
      `${"page".padEnd(62)}${"first".padStart(8)}${"p50".padStart(8)}${"p95".padStart(8)}${"max".padStart(8)}${
        "cpu".padStart(8)
      }${"KB".padStart(8)}`,
    );
    for (const path of pages) {
      const times: number[] = [];
      let bytes = 0;
      let cpu = 0;
      let first = 0;
      for (let run = 0; run < RUNS + 3; run++) {
        const t0 = performance.now();
        const cpu0 = process.cpuUsage();
        const res = await fetch(`${url}${path}`, { headers: { cookie } });
        const body = await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
        if (run === 0) first = performance.now() - t0;
        if (run >= 3) {
          times.push(performance.now() - t0);
          const used = process.cpuUsage(cpu0);
          cpu += (used.user + used.system) / 1000;
        }
        bytes = body.byteLength;
      }
      times.sort((a, b) => a - b);
      const [p50, p95, max] = [percentile(times, 0.5), percentile(times, 0.95), times.at(-1)!];
      console.log(
        `${path.padEnd(62)}${first.toFixed(1).padStart(8)}${p50.toFixed(1).padStart(8)}${p95.toFixed(1).padStart(8)}${
          max.toFixed(1).padStart(8)
        }${(cpu / RUNS).toFixed(1).padStart(8)}${(bytes / 1024).toFixed(0).padStart(8)}`,
      );
    }
    await server.shutdown();
    await deps.operator.close();
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

await main();

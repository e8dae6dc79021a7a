/**
 * @module `deno task bench:kv`: the limits on a remote-like KV. Gateway processes share one KV file with every KV call
 * delayed by `--kv-rtt` ms (the test seam MODELGATE_KV_RTT_MS, docs/scaling.md). Case 1: one instance, a limited and
 * an unlimited token, sequential requests, time to first byte against the same case at rtt 0 and the KV calls per
 * request. Case 2: 1, 2, 4, 8 instances, one group limited to 600 requests a minute driven at 1,200 a minute: what
 * each window admitted, every status, give-ups and conflicts.
 */
import { formatColumns } from "./report.ts";
import { type ProcessSet, processSet } from "./processes.ts";
import { ROOT, startUpstream } from "./setup.ts";
import { type Cluster, configYaml, createToken, parseKvArgs, scrape, startCluster, USAGE } from "./kv_setup.ts";

const BODY = JSON.stringify({
  model: "bench-claude",
  max_tokens: 16,
  messages: [{ role: "user", content: "Hi" }],
});

/** Sends one request; its status, time to the response's head, and whether a 429 was well-formed. */
async function send(url: string, token: string): Promise<{ status: number; ttfbMs: number; wellFormed: boolean }> {
  const start = performance.now();
  const res = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": token, "anthropic-version": "2023-06-01" },
    body: BODY,
  });
  const ttfbMs = performance.now() - start;
  const text = await res.text();
  let wellFormed = true;
  if (res.status === 429) {
    const type = (() => {
      try {
        return JSON.parse(text).error?.type;
      } catch {
        return undefined;
      }
    })();
    wellFormed = type === "rate_limit_error" && /^\d+$/.test(res.headers.get("retry-after") ?? "");
  }
  return { status: res.status, ttfbMs, wellFormed };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** Sequential requests of one token for `seconds`; TTFBs and the KV work per request (background included). */
async function sequential(cluster: Cluster, token: string, seconds: number) {
  for (let i = 0; i < 50; i++) await send(cluster.urls[0], token);
  const before = await scrape(cluster.urls);
  const times: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const { status, ttfbMs } = await send(cluster.urls[0], token);
    if (status !== 200) throw new Error(`latency case: HTTP ${status}`);
    times.push(ttfbMs);
  }
  const after = await scrape(cluster.urls);
  const n = times.length;
  return {
    requests: n,
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    commitsPerRequest: (after.commits - before.commits) / n,
    tripsPerRequest: (after.trips - before.trips) / n,
    shareCommitsPerRequest: (after.shareWrites - before.shareWrites) / n,
  };
}

async function latencyCase(processes: ProcessSet, upstreamUrl: string, rtt: number, seconds: number) {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-bench-kv-" });
  try {
    const config = await configYaml(dir, upstreamUrl);
    const limited = await createToken(dir, config, "limited", [
      "--requests-per-minute",
      "1000000",
      "--tokens-per-day",
      "1000000000",
    ]);
    const open = await createToken(dir, config, "open", []);
    const cluster = await startCluster(processes, { dir, config, instances: 1, rtt });
    try {
      return { limited: await sequential(cluster, limited, seconds), open: await sequential(cluster, open, seconds) };
    } finally {
      await cluster.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** N instances, the group `capped` (600 a minute) driven at `perMinute` for whole minutes, round robin. */
async function instancesCase(
  processes: ProcessSet,
  upstreamUrl: string,
  options: { instances: number; rtt: number; minutes: number; perMinute: number },
) {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-bench-kv-" });
  try {
    const config = await configYaml(dir, upstreamUrl);
    const token = await createToken(dir, config, "capped", []);
    const cluster = await startCluster(processes, { dir, config, instances: options.instances, rtt: options.rtt });
    try {
      const before = await scrape(cluster.urls);
      // Whole calendar minutes: the limit counts per UTC minute.
      await new Promise((resolve) => setTimeout(resolve, 60_000 - (Date.now() % 60_000) + 50));
      const startedAt = Date.now();
      const gap = 60_000 / options.perMinute;
      const total = options.minutes * options.perMinute;
      const results: Promise<{ window: number; status: number; wellFormed: boolean }>[] = [];
      for (let i = 0; i < total; i++) {
        const due = startedAt + i * gap;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const window = Math.floor(Date.now() / 60_000);
        results.push(send(cluster.urls[i % cluster.urls.length], token).then((r) => ({ window, ...r })));
      }
      const done = await Promise.all(results);
      const after = await scrape(cluster.urls);
      const sent = new Map<number, number>();
      const windows = new Map<number, number>();
      const statuses: Record<number, number> = {};
      for (const r of done) {
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        sent.set(r.window, (sent.get(r.window) ?? 0) + 1);
        if (r.status === 200) windows.set(r.window, (windows.get(r.window) ?? 0) + 1);
      }
      // Only whole windows count: the last request may be sent a moment into the next minute.
      const whole = [...sent].filter(([, n]) => n >= options.perMinute * 0.95).map(([window]) => window);
      const seconds = (Date.now() - startedAt) / 1000;
      return {
        admitted: whole.map((window) => windows.get(window) ?? 0),
        statuses,
        malformed429: done.filter((r) => !r.wellFormed).length,
        giveUps: after.giveUps - before.giveUps,
        conflictsPerSecond: (after.conflicts - before.conflicts) / seconds,
        commitsPerRequest: (after.commits - before.commits) / done.length,
        tripsPerRequest: (after.trips - before.trips) / done.length,
      };
    } finally {
      await cluster.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const verdict = (ok: boolean) => ok ? "PASS" : "FAIL";
const ms = (value: number) => value.toFixed(2);

async function main(): Promise<number> {
  const options = parseKvArgs(Deno.args);
  if (!options) {
    console.error(USAGE);
    return 2;
  }
  const processes = processSet(false);
  const stop = () => void processes.stopAll().then(() => Deno.exit(130));
  Deno.addSignalListener("SIGINT", stop);
  try {
    const upstream = await startUpstream(processes);
    console.log(`bench:kv from ${ROOT}: --kv-rtt ${options.rtt} ms, ${new Date().toISOString()}`);
    const base = await latencyCase(processes, upstream.url, 0, options.seconds);
    const slow = await latencyCase(processes, upstream.url, options.rtt, options.seconds);
    const rows = [[
      "case (1 instance)",
      "requests",
      "p50 ms",
      "p99 ms",
      "added p50",
      "added p99",
      "commits/req",
      "KV calls/req",
      "share commits/req",
      "verdict",
    ]];
    for (const kind of ["limited", "open"] as const) {
      const [a, b] = [base[kind], slow[kind]];
      const addedP50 = b.p50 - a.p50;
      const addedP99 = b.p99 - a.p99;
      const ok = addedP50 <= 1 && addedP99 <= 25 && b.commitsPerRequest <= 0.1;
      rows.push([
        `${kind} @ rtt ${options.rtt}`,
        String(b.requests),
        ms(b.p50),
        ms(b.p99),
        ms(addedP50),
        ms(addedP99),
        b.commitsPerRequest.toFixed(4),
        b.tripsPerRequest.toFixed(4),
        b.shareCommitsPerRequest.toFixed(4),
        verdict(ok),
      ]);
      rows.push([
        `${kind} @ rtt 0`,
        String(a.requests),
        ms(a.p50),
        ms(a.p99),
        "",
        "",
        a.commitsPerRequest.toFixed(4),
        a.tripsPerRequest.toFixed(4),
        a.shareCommitsPerRequest.toFixed(4),
        "",
      ]);
    }
    console.log(formatColumns(rows));
    const many = [[
      "instances",
      "admitted per window",
      "statuses",
      "bad 429s",
      "give-ups",
      "conflicts/s",
      "commits/req",
      "KV calls/req",
      "verdict",
    ]];
    for (const instances of options.instances) {
      const r = await instancesCase(processes, upstream.url, {
        instances,
        rtt: options.rtt,
        minutes: options.minutes,
        perMinute: 1200,
      });
      const others = Object.keys(r.statuses).filter((s) => s !== "200" && s !== "429").length;
      const ok = r.admitted.every((n) => n >= 590 && n <= 600 + instances) && others === 0 && r.giveUps === 0 &&
        r.malformed429 === 0;
      many.push([
        String(instances),
        r.admitted.join(", "),
        JSON.stringify(r.statuses),
        String(r.malformed429),
        String(r.giveUps),
        r.conflictsPerSecond.toFixed(2),
        r.commitsPerRequest.toFixed(4),
        r.tripsPerRequest.toFixed(4),
        verdict(ok),
      ]);
      console.log(`  ${instances} instance(s) done`);
    }
    console.log(formatColumns(many));
    return 0;
  } finally {
    Deno.removeSignalListener("SIGINT", stop);
    await processes.stopAll();
  }
}

if (import.meta.main) Deno.exit(await main());

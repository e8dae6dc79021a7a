/**
 * @module `deno task bench:batches`: a batch the gateway runs itself, of `--count` Messages requests (1,000 by
 * default) onto the fake upstream's chat model, made through POST /v1/messages/batches and polled to its end as a
 * client would; the requests it ran a second and the gateway's peak RSS, beside the same requests sent to
 * /v1/messages directly with as many in flight as the batch runs at once (`batches.concurrency`).
 */
import { benchArgs, parseCountFlags, runMemoryBench } from "./memory_run.ts";
import { readMemory } from "./processes.ts";
import { requestHeaders, type Service, startGateway } from "./setup.ts";

const MB = 1024 * 1024;

const USAGE = `Usage: deno task bench:batches [--count N] [--concurrency N]

  --count N         requests in the batch (default 1000)
  --concurrency N   batches.concurrency: requests the gateway runs at once (default 8)`;

/** How one run is shaped. */
export interface BatchBenchOptions {
  count: number;
  concurrency: number;
}

/** Parses the flags; undefined for --help. */
export function parseBatchArgs(args: readonly string[]): BatchBenchOptions | undefined {
  return parseCountFlags<BatchBenchOptions & Record<string, number>>(args, {
    flags: { "--count": "count", "--concurrency": "concurrency" },
    defaults: { count: 1000, concurrency: 8 },
    usage: USAGE,
    valid: (key, value) => key === "concurrency" ? value >= 1 && value <= 256 : value >= 1 && value <= 100_000,
  });
}

/** One request of the batch: a short Messages request onto the OpenAI-compatible model (no batch API of its own). */
function params(i: number): Record<string, unknown> {
  return { model: "bench-gpt", max_tokens: 64, messages: [{ role: "user", content: `Request ${i}: say hello.` }] };
}

/** Makes the batch and polls it to its end; the seconds from the create to the end and the succeeded count. */
async function runBatch(
  gateway: Service,
  token: string,
  count: number,
): Promise<{ seconds: number; lines: number; createdS: number }> {
  const headers = requestHeaders(token);
  const requests = Array.from({ length: count }, (_, i) => ({ custom_id: `r${i}`, params: params(i) }));
  const started = performance.now();
  const made = await fetch(`${gateway.url}/v1/messages/batches`, {
    method: "POST",
    headers,
    body: JSON.stringify({ requests }),
  });
  const batch = await made.json();
  const createdS = (performance.now() - started) / 1000;
  if (!made.ok) throw new Error(`creating the batch answered ${made.status}: ${JSON.stringify(batch)}`);
  for (;;) {
    const res = await fetch(`${gateway.url}/v1/messages/batches/${batch.id}`, { headers });
    const now = await res.json();
    if (now.processing_status === "ended") {
      const seconds = (performance.now() - started) / 1000;
      const results = await fetch(`${gateway.url}/v1/messages/batches/${batch.id}/results`, { headers });
      const text = await results.text();
      const lines = text.split("\n").filter((line) => line.includes('"type":"succeeded"')).length;
      return { seconds, lines, createdS };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Sends the same requests to /v1/messages, `concurrency` at a time; their seconds and the successes. */
async function runDirect(gateway: Service, token: string, options: BatchBenchOptions) {
  const headers = requestHeaders(token);
  let next = 0;
  let ok = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, async () => {
    while (next < options.count) {
      const i = next++;
      const res = await fetch(`${gateway.url}/v1/messages`, {
        method: "POST",
        headers,
        body: JSON.stringify(params(i)),
      });
      await res.body?.cancel();
      if (res.ok) ok++;
    }
  }));
  return { seconds: (performance.now() - started) / 1000, ok };
}

async function main(): Promise<number> {
  const options = benchArgs(parseBatchArgs, USAGE);
  if (typeof options === "number") return options;
  return await runMemoryBench("modelgate-bench-batches-", async ({ processes, dir, config, token }) => {
    await Deno.writeTextFile(config, `batches: { concurrency: ${options.concurrency}, poll_ms: 200 }\n`, {
      append: true,
    });
    const line = (what: string, count: number, seconds: number, memory: { rssBytes: number }, peak: number) =>
      console.log(
        `${what}: ${count} of ${options.count} in ${seconds.toFixed(2)} s, ${(options.count / seconds).toFixed(0)} ` +
          `requests/s; RSS ${(memory.rssBytes / MB).toFixed(0)} MB before, peak ${(peak / MB).toFixed(0)} MB`,
      );
    for (
      const [what, run] of [
        ["gateway-run batch", async (gateway: Service) => {
          const { seconds, lines, createdS } = await runBatch(gateway, token, options.count);
          console.log(`the batch's create answered in ${createdS.toFixed(2)} s`);
          return { count: lines, seconds };
        }],
        [`direct /v1/messages, ${options.concurrency} in flight`, async (gateway: Service) => {
          const { seconds, ok } = await runDirect(gateway, token, options);
          return { count: ok, seconds };
        }],
      ] as const
    ) {
      // A fresh gateway each, so each peak is its own.
      const gateway = await startGateway(processes, { dir, config });
      const before = await readMemory(gateway.process.pid);
      const { count, seconds } = await run(gateway);
      const after = await readMemory(gateway.process.pid);
      await processes.stop(gateway.process);
      line(what, count, seconds, before, after.peakRssBytes);
    }
    return 0;
  });
}

if (import.meta.main) {
  Deno.exitCode = await main();
}

/**
 * @module `deno task bench:conversations`: the gateway's memory when many small requests continue one large stored
 * conversation, beside as many requests that send a conversation that large themselves. Each case runs on a fresh
 * gateway process (the stored response is kept by an earlier one), and reports the answers' statuses and the peak
 * RSS growth (VmHWM less the RSS before). Then a chain of `--chain` turns, one after another: the time of its first
 * and last ten steps and the RSS it ends with.
 */
import { benchArgs, parseCountFlags, runMemoryBench } from "./memory_run.ts";
import { readMemory } from "./processes.ts";
import { requestHeaders, type Service, startGateway } from "./setup.ts";

const MB = 1024 * 1024;

const USAGE = `Usage: deno task bench:conversations [--size MB] [--count N] [--chain TURNS]

  --size MB       size of the stored conversation, and of each whole request (default 20)
  --count N       requests sent at once (default 30)
  --chain TURNS   length of the previous_response_id chain, 20 to 1000 (default 1000)`;

/** How one run is shaped. */
export interface ConversationOptions {
  sizeMb: number;
  count: number;
  chain: number;
}

/** Parses the flags; undefined for --help. */
export function parseConversationArgs(args: readonly string[]): ConversationOptions | undefined {
  return parseCountFlags<ConversationOptions & Record<string, number>>(args, {
    flags: { "--size": "sizeMb", "--count": "count", "--chain": "chain" },
    defaults: { sizeMb: 20, count: 30, chain: 1000 },
    usage: USAGE,
    valid: (key, value) => key === "chain" ? value >= 20 && value <= 1000 : value >= 1,
  });
}

/** A Responses body whose input is one user message of about `bytes` bytes. */
function wholeBody(bytes: number, store: boolean): string {
  return JSON.stringify({ model: "bench-claude", max_output_tokens: 64, store, input: "A".repeat(bytes) });
}

async function post(gateway: Service, token: string, body: string): Promise<{ status: number; id?: string }> {
  const res = await fetch(`${gateway.url}/v1/responses`, { method: "POST", headers: requestHeaders(token), body });
  const text = await res.text();
  return { status: res.status, id: res.ok ? JSON.parse(text).id : undefined };
}

function statuses(list: { status: number }[]): string {
  const counts = new Map<number, number>();
  for (const { status } of list) counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => a - b).map(([status, n]) => `${n} x ${status}`).join(", ");
}

/** Continues one chain `turns` times, one step after another; how the first and last ten steps went. */
async function chainSteps(gateway: Service, token: string, turns: number): Promise<string> {
  const ms: number[] = [];
  let previous: string | undefined;
  for (let turn = 0; turn < turns; turn++) {
    const started = performance.now();
    const body = {
      model: "bench-claude",
      max_output_tokens: 64,
      input: `Step ${turn}.`,
      previous_response_id: previous,
    };
    const answer = await post(gateway, token, JSON.stringify(body));
    if (!answer.id) throw new Error(`chain step ${turn} answered ${answer.status}`);
    ms.push(performance.now() - started);
    previous = answer.id;
  }
  const mean = (list: number[]) => (list.reduce((sum, value) => sum + value, 0) / list.length).toFixed(1);
  const memory = await readMemory(gateway.process.pid);
  return `a chain of ${turns} turns: ${(ms.reduce((sum, value) => sum + value, 0) / 1000).toFixed(1)} s, mean step ` +
    `${mean(ms.slice(0, 10))} ms for the first ten, ${mean(ms.slice(-10))} ms for the last ten; RSS ` +
    `${(memory.rssBytes / MB).toFixed(0)} MB after, peak ${(memory.peakRssBytes / MB).toFixed(0)} MB`;
}

async function main(): Promise<number> {
  const options = benchArgs(parseConversationArgs, USAGE);
  if (typeof options === "number") return options;
  return await runMemoryBench("modelgate-bench-conversations-", async ({ processes, dir, config, token }) => {
    const bytes = options.sizeMb * MB;
    // The large conversation is kept by a gateway of its own, so its peak does not count below.
    const keeper = await startGateway(processes, { dir, config });
    const stored = await post(keeper, token, wholeBody(bytes, true));
    await processes.stop(keeper.process);
    if (!stored.id) throw new Error(`storing the conversation answered ${stored.status}`);
    const cases: [string, string][] = [
      [`whole requests of ${options.sizeMb} MB`, wholeBody(bytes, false)],
      [
        `continuations of a stored ${options.sizeMb} MB conversation`,
        JSON.stringify({ model: "bench-claude", previous_response_id: stored.id, input: "Go on.", store: false }),
      ],
    ];
    for (const [name, body] of cases) {
      const gateway = await startGateway(processes, { dir, config });
      await post(gateway, token, wholeBody(16, false));
      const before = await readMemory(gateway.process.pid);
      const answers = await Promise.all(Array.from({ length: options.count }, () => post(gateway, token, body)));
      const after = await readMemory(gateway.process.pid);
      await processes.stop(gateway.process);
      const growth = (after.peakRssBytes - before.rssBytes) / MB;
      console.log(
        `${options.count} ${name} (${(body.length / 1024).toFixed(1)} kB each): ${statuses(answers)}; ` +
          `RSS ${(before.rssBytes / MB).toFixed(0)} MB before, peak ${(after.peakRssBytes / MB).toFixed(0)} MB ` +
          `(+${growth.toFixed(0)} MB)`,
      );
    }
    await Deno.writeTextFile(config, `responses_store: { max_chain_turns: ${options.chain} }\n`, { append: true });
    console.log(await chainSteps(await startGateway(processes, { dir, config }), token, options.chain));
    return 0;
  });
}

if (import.meta.main) {
  Deno.exitCode = await main();
}

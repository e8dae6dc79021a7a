/**
 * @module `deno task bench:bodies`: the gateway's memory under large request bodies and a large answer. Several bodies
 * of many megabytes are sent at once (passthrough, and translated to a chat upstream), each round to a fresh gateway
 * process, and the peak RSS growth (VmHWM less the RSS before) is compared with the bytes of the bodies in flight;
 * then one large streamed answer goes to a client of each protocol (answers.ts).
 */
import { answerLines, answerMet, measureAnswers } from "./answers.ts";
import { benchArgs, type MemoryBench, parseCountFlags, runMemoryBench } from "./memory_run.ts";
import { readMemory } from "./processes.ts";
import { median } from "./report.ts";
import { requestHeaders, startGateway } from "./setup.ts";
import { type BodiesResult, LIMITS } from "./targets.ts";

const MB = 1024 * 1024;

/** How one run is shaped. */
export interface BodiesOptions {
  sizeMb: number;
  count: number;
  rounds: number;
  /** The large answer's size in MB; 0 leaves that part out. */
  answerMb: number;
}

const USAGE = `Usage: deno task bench:bodies [--size MB] [--count N] [--rounds R] [--answer MB]

  --size MB     size of each request body (default 20)
  --count N     bodies sent at once (default 10; 0 leaves the bodies out)
  --rounds R    fresh gateway processes per case; the median is judged (default 3)
  --answer MB   size of the large streamed answer (default 50; 0 leaves it out)`;

/** Parses the flags; undefined for --help. */
export function parseBodiesArgs(args: readonly string[]): BodiesOptions | undefined {
  return parseCountFlags<BodiesOptions & Record<string, number>>(args, {
    flags: { "--size": "sizeMb", "--count": "count", "--rounds": "rounds", "--answer": "answerMb" },
    defaults: { sizeMb: 20, count: 10, rounds: 3, answerMb: 50 },
    usage: USAGE,
    valid: (key, value) => value >= (key === "answerMb" || key === "count" ? 0 : 1),
  });
}

/**
 * A Messages body of `bytes` bytes the way a coding client sends a large one: a long conversation of text turns and
 * an image, so the parsed tree holds many strings and one very long one.
 */
export function largeBody(model: string, bytes: number): Uint8Array<ArrayBuffer> {
  const turn = "Here is more of the file under discussion. ".repeat(48);
  const messages: unknown[] = [];
  let size = 0;
  while (size < bytes / 2) {
    messages.push({ role: messages.length % 2 ? "assistant" : "user", content: [{ type: "text", text: turn }] });
    size += turn.length + 60;
  }
  if (messages.length % 2) messages.push({ role: "assistant", content: "Go on." });
  const skeleton = JSON.stringify({ model, max_tokens: 64, messages: [...messages, { role: "user", content: [] }] });
  const data = "A".repeat(Math.max(0, bytes - skeleton.length - 120));
  const image = { type: "image", source: { type: "base64", media_type: "image/png", data } };
  messages.push({ role: "user", content: [image, { type: "text", text: "What is in the picture?" }] });
  return new TextEncoder().encode(JSON.stringify({ model, max_tokens: 64, messages }));
}

/**
 * Sends `count` bodies of `sizeMb` at once to a fresh gateway per round, passthrough and translated; the peak RSS
 * growth over the bytes in flight of each round, and their median.
 */
export async function measureBodies(
  bench: MemoryBench,
  options: Omit<BodiesOptions, "answerMb">,
): Promise<BodiesResult[]> {
  const { processes, dir, config, token } = bench;
  const results: BodiesResult[] = [];
  for (const [name, model] of [["passthrough", "bench-claude"], ["translated", "bench-gpt"]]) {
    const body = largeBody(model, options.sizeMb * MB);
    const inFlight = body.byteLength * options.count;
    const ratios: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const gateway = await startGateway(processes, { dir, config });
      const send = async (payload: BodyInit) => {
        const res = await fetch(`${gateway.url}/v1/messages`, {
          method: "POST",
          headers: requestHeaders(token),
          body: payload,
        });
        await res.body?.cancel();
        return res.status;
      };
      for (let i = 0; i < 3; i++) await send(JSON.stringify({ model, max_tokens: 8, messages: [] }));
      const before = await readMemory(gateway.process.pid);
      const statuses = await Promise.all(Array.from({ length: options.count }, () => send(body)));
      const after = await readMemory(gateway.process.pid);
      await processes.stop(gateway.process);
      if (statuses.some((status) => status !== 200)) throw new Error(`${name}: answers ${statuses.join(",")}`);
      ratios.push((after.peakRssBytes - before.rssBytes) / inFlight);
    }
    results.push({ name, count: options.count, sizeMb: options.sizeMb, ratios, median: median(ratios) });
  }
  return results;
}

async function main(): Promise<number> {
  const options = benchArgs(parseBodiesArgs, USAGE);
  if (typeof options === "number") return options;
  return await runMemoryBench("modelgate-bench-bodies-", async (bench) => {
    const results = options.count > 0 ? await measureBodies(bench, options) : [];
    console.log(
      results.map((r) =>
        `${r.name.padEnd(12)} ${r.count} x ${r.sizeMb.toFixed(1)} MB: peak RSS growth ${
          r.median.toFixed(2)
        }x the bodies in flight (rounds ${
          r.ratios.map((x) => x.toFixed(2)).join(", ")
        }), target <= ${LIMITS.bodies}x: ${r.median <= LIMITS.bodies ? "PASS" : "FAIL"}`
      ).join("\n"),
    );
    const bodiesMet = results.every((r) => r.median <= LIMITS.bodies);
    if (options.answerMb === 0) return bodiesMet ? 0 : 1;
    const answers = await measureAnswers(bench, { answerMb: options.answerMb, rounds: options.rounds });
    console.log(answerLines(answers));
    return bodiesMet && answers.every(answerMet) ? 0 : 1;
  });
}

if (import.meta.main) {
  Deno.exitCode = await main();
}

/**
 * @module The gateway's memory under one large streamed answer (part of `deno task bench:bodies`): the fake upstream
 * streams `--answer` MB of text, a client of each protocol reads all of it (a Responses client over HTTP, stored and
 * not, and over the socket), each case on a fresh gateway process, and the peak RSS growth (VmHWM less the RSS
 * before) is compared with the answer's size. What the protocol repeats (a Responses client gets the text again in
 * the `.done` events and `response.completed`) is sent, but the gateway should not hold those copies at once.
 */
import { LARGE_MODEL } from "./fake_upstream.ts";
import type { MemoryBench } from "./memory_run.ts";
import { readMemory } from "./processes.ts";
import { median } from "./report.ts";
import { requestHeaders, startGateway } from "./setup.ts";
import { LIMITS } from "./targets.ts";

const MB = 1024 * 1024;

/** One large-answer case: the peak RSS growth of each round, in MB, and what the client received. */
export interface AnswerResult {
  name: string;
  /** Why the case has no target, when it has none. */
  unjudged?: string;
  answerMb: number;
  receivedMb: number;
  growthMb: number[];
  median: number;
}

/**
 * How a client of each case asks for, and reads, an answer of `mb` MB; resolves with the bytes it received. The stream
 * itself is judged; keeping the answer (the store encodes the record whole) and the socket's own copies are measured
 * beside it.
 */
const CASES: { name: string; unjudged?: string; read(url: string, token: string, mb: number): Promise<number> }[] = [
  { name: "messages", read: (url, token, mb) => post(url, token, "/v1/messages", messages(mb)) },
  { name: "chat", read: (url, token, mb) => post(url, token, "/v1/chat/completions", messages(mb)) },
  { name: "responses", read: (url, token, mb) => post(url, token, "/v1/responses", responses(mb, false)) },
  {
    name: "responses stored",
    unjudged: "the stored record is encoded whole",
    read: (url, token, mb) => post(url, token, "/v1/responses", responses(mb, true)),
  },
  { name: "responses socket", unjudged: "the socket's own copies", read: socketRead },
];

function messages(mb: number): Record<string, unknown> {
  return { model: LARGE_MODEL, max_tokens: 64, stream: true, messages: [{ role: "user", content: `answer_mb:${mb}` }] };
}

function responses(mb: number, store: boolean): Record<string, unknown> {
  return { model: LARGE_MODEL, stream: true, store, input: `answer_mb:${mb}` };
}

async function post(url: string, token: string, path: string, body: unknown): Promise<number> {
  const res = await fetch(url + path, { method: "POST", headers: requestHeaders(token), body: JSON.stringify(body) });
  if (res.status !== 200 || !res.body) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  let bytes = 0;
  for await (const chunk of res.body) bytes += chunk.byteLength;
  return bytes;
}

/** A `response.create` over a Responses socket, read to its `response.completed`. */
function socketRead(url: string, token: string, mb: number): Promise<number> {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/responses`, {
    headers: { authorization: `Bearer ${token}` },
  } as unknown as string[]);
  const { promise, resolve, reject } = Promise.withResolvers<number>();
  let bytes = 0;
  ws.onopen = () => ws.send(JSON.stringify({ type: "response.create", ...responses(mb, false), stream: undefined }));
  ws.onmessage = (event) => {
    const text = String(event.data);
    bytes += text.length;
    if (text.startsWith('{"type":"response.completed"')) ws.close();
    else if (text.startsWith('{"type":"error"')) reject(new Error(text.slice(0, 300)));
  };
  ws.onclose = () => resolve(bytes);
  ws.onerror = () => reject(new Error("the socket failed"));
  return promise;
}

/** Each case on a fresh gateway per round: its peak RSS growth while one answer of `answerMb` MB goes through. */
export async function measureAnswers(
  bench: MemoryBench,
  options: { answerMb: number; rounds: number },
): Promise<AnswerResult[]> {
  const { processes, dir, config, token } = bench;
  const results: AnswerResult[] = [];
  for (const c of CASES) {
    const growth: number[] = [];
    let received = 0;
    for (let round = 0; round < options.rounds; round++) {
      const gateway = await startGateway(processes, { dir, config });
      try {
        await c.read(gateway.url, token, 1);
        const before = await readMemory(gateway.process.pid);
        received = await c.read(gateway.url, token, options.answerMb);
        const after = await readMemory(gateway.process.pid);
        growth.push((after.peakRssBytes - before.rssBytes) / MB);
      } finally {
        await processes.stop(gateway.process);
      }
    }
    results.push({
      name: c.name,
      answerMb: options.answerMb,
      receivedMb: received / MB,
      growthMb: growth,
      median: median(growth),
      unjudged: c.unjudged,
    });
  }
  return results;
}

/** True when a judged case's median peak RSS growth is within `LIMITS.answer` times the answer. */
export function answerMet(result: AnswerResult): boolean {
  return result.unjudged !== undefined || result.median <= LIMITS.answer * result.answerMb;
}

/** One line per case, with its verdict. */
export function answerLines(results: readonly AnswerResult[]): string {
  return results.map((r) => {
    const verdict = r.unjudged
      ? `no target (${r.unjudged})`
      : `target <= ${LIMITS.answer}x: ${answerMet(r) ? "PASS" : "FAIL"}`;
    return `${r.name.padEnd(17)} ${r.answerMb} MB answer, ${r.receivedMb.toFixed(0)} MB to the client: peak RSS ` +
      `growth ${r.median.toFixed(0)} MB, ${(r.median / r.answerMb).toFixed(2)}x the answer (rounds ${
        r.growthMb.map((x) => x.toFixed(0)).join(", ")
      }), ${verdict}`;
  }).join("\n");
}

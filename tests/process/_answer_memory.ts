/**
 * @module Run by answer_memory_test.ts (and by hand for other sizes): a test gateway in front of a fake upstream whose
 * non-streamed answer is `MB` megabytes of text, asked `COUNT` times at once by a client that reads each answer as it
 * comes and keeps none of it, passed through (a Messages client) or translated (a Chat Completions client); or asked
 * of the upstream itself (`direct`: what the fake upstream and the client cost on their own), or through a server that
 * pipes the body through as it comes (`pipe`: the cost of the two hops a gateway adds, holding nothing). Prints
 * how far the process's resident memory rose at its peak above where it stood just before, per answer.
 * Usage: _answer_memory.ts MB passthrough|translated|direct|pipe COUNT
 */
import { anthropicMessage, startGateway, testConfigYaml } from "../_helpers.ts";
import { fakeUpstream } from "../_fake_upstream.ts";

const [mb, mode, count] = [Number(Deno.args[0] ?? 50), Deno.args[1] ?? "passthrough", Number(Deno.args[2] ?? 1)];
const MB = 1024 * 1024;
const gc = (globalThis as unknown as { gc(): void }).gc;

/**
 * The process's resident memory (MB), sampled every few milliseconds while `run` runs: /proc's own peak needs all
 * permissions, and the runtime keeps the pages it grew by for a while, so a sample soon after a peak still sees it.
 */
async function peakDuring<T>(run: () => Promise<T>): Promise<{ result: T; peak: number }> {
  const rss = () => Deno.memoryUsage().rss / MB;
  let peak = rss();
  const timer = setInterval(() => peak = Math.max(peak, rss()), 2);
  try {
    const result = await run();
    return { result, peak: Math.max(peak, rss()) };
  } finally {
    clearInterval(timer);
  }
}

/** The answer's bytes, made without a string of its size: a text of `mb` MB of "x" in an Anthropic message. */
function answerBytes(): Uint8Array<ArrayBuffer> {
  const [head, tail] = JSON.stringify(anthropicMessage("@")).split("@").map((part) => new TextEncoder().encode(part));
  const bytes = new Uint8Array(head.length + mb * MB + tail.length).fill(0x78);
  bytes.set(head);
  bytes.set(tail, bytes.length - tail.length);
  return bytes;
}
const answer = answerBytes();
await using upstream = fakeUpstream();
// Four answers of 50 MB take a loaded machine longer than the test gateway's usual limits.
const configYaml = testConfigYaml(upstream.url, { timeoutMs: 120_000, maxAnswerBytes: 2 * answer.length }).replace(
  "deadline_ms: 5000",
  "deadline_ms: 120000",
);
await using gw = await startGateway(upstream.url, { configYaml });
const [path, body] = mode === "translated"
  ? ["/v1/chat/completions", { model: "claude-test", messages: [{ role: "user", content: "Hi" }] }]
  : ["/v1/messages", { model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }];
/** One request, its answer read and counted, never kept. */
// The same two hops with nothing held between them: a server that pipes the upstream's body through as it comes.
await using pipe = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
  const res = await fetch(`${upstream.url}/anth/v1/messages`, { method: "POST", body: req.body });
  return new Response(res.body, { headers: res.headers });
});
const direct = mode === "direct" ? upstream.url : mode === "pipe" ? `http://127.0.0.1:${pipe.addr.port}` : undefined;
async function ask(): Promise<number> {
  const res = direct
    ? await fetch(`${direct}/anth/v1/messages`, { method: "POST", body: JSON.stringify(body) })
    : await gw.post(path, body);
  let bytes = 0;
  for await (const chunk of res.body!) bytes += chunk.length;
  if (res.status !== 200) throw new Error(`answered ${res.status}`);
  return bytes;
}
// A small answer first, so what runs only once (the gateway's first request) is not counted.
upstream.routes.set("POST /anth/v1/messages", () => Response.json(anthropicMessage("warm")));
await ask();
upstream.routes.set(
  "POST /anth/v1/messages",
  () => new Response(answer, { headers: { "content-type": "application/json" } }),
);
upstream.requests.splice(0);
gc();
const before = Deno.memoryUsage().rss / MB;
const { result: sizes, peak } = await peakDuring(() => Promise.all(Array.from({ length: count }, ask)));
console.log(JSON.stringify({
  mb,
  mode,
  count,
  answerBytes: answer.length,
  sentBytes: sizes[0],
  rssBeforeMb: Math.round(before),
  peakMb: Math.round(peak),
  grownPerAnswerMb: Math.round((peak - before) / count),
}));

/** @module The benchmark's fake upstream (its answers and streams per protocol) and its /proc readers. */
import assert from "node:assert/strict";
import { bodyReader, readText } from "../_reads.ts";
import {
  anthropicEvents,
  containsBytes,
  createFakeUpstream,
  LARGE_DELTA_BYTES,
  LARGE_MODEL,
  LONG_EVENTS,
  LONG_MODEL,
  openaiEvents,
  PACED_EVENTS,
  PACED_MODEL,
  responsesEvents,
  STREAM_MARKER,
} from "../../bench/fake_upstream.ts";
import { parseMachineStat, parseProcStat, parseProcStatus } from "../../bench/processes.ts";

const encode = (text: string) => new TextEncoder().encode(text);

const SEARCH_CASES = [
  { name: "finds the marker in a body", haystack: '{"model":"m","stream":true}', needle: '"stream":true', want: true },
  { name: "does not match stream false", haystack: '{"stream":false}', needle: '"stream":true', want: false },
  {
    name: "does not match a partial marker at the end",
    haystack: '{"stream":tru',
    needle: '"stream":true',
    want: false,
  },
  {
    name: "finds a marker after a false start",
    haystack: '"stream""stream":true',
    needle: '"stream":true',
    want: true,
  },
  { name: "finds the empty needle", haystack: "", needle: "", want: true },
  { name: "misses in an empty body", haystack: "", needle: "x", want: false },
];
for (const c of SEARCH_CASES) {
  Deno.test(`containsBytes() ${c.name}`, () =>
    assert.equal(containsBytes(encode(c.haystack), encode(c.needle)), c.want));
}

const handle = createFakeUpstream();
const post = (path: string, body: unknown) =>
  handle(new Request(`http://127.0.0.1:1${path}`, { method: "POST", body: JSON.stringify(body) }));

Deno.test("createFakeUpstream() answers a Messages request with a fixed message", async () => {
  const res = await post("/v1/messages", { model: "m", messages: [] });
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.equal((await res.json()).type, "message");
});

Deno.test("createFakeUpstream() streams one chunk per event when the body asks for a stream", async () => {
  const res = await post("/v1/messages", { model: "m", stream: true });
  assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
  const chunks: string[] = [];
  await using body = bodyReader(res);
  for (let chunk = await body.next(); chunk !== undefined; chunk = await body.next()) chunks.push(chunk);
  assert.deepEqual(chunks, anthropicEvents());
});

Deno.test("createFakeUpstream() answers Chat Completions and Responses in both forms, embeddings, and 404s elsewhere", async () => {
  assert.equal((await (await post("/v1/chat/completions", {})).json()).object, "chat.completion");
  const stream = await readText(await post("/v1/chat/completions", { stream: true }));
  assert.equal(stream, openaiEvents().join(""));
  assert.equal((await (await post("/v1/responses", {})).json()).object, "response");
  assert.equal(await readText(await post("/v1/responses", { stream: true })), responsesEvents().join(""));
  const embeddings = await (await post("/v1/embeddings", {})).json();
  assert.equal(embeddings.data.length, 16);
  assert.equal(Uint8Array.fromBase64(embeddings.data[15].embedding).length, 1536 * 4, "base64 of 1,536 float32");
  const missing = await post("/v1/audio/speech", {});
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
});

Deno.test("the fake streams have about a dozen well-formed events with the protocols' endings", () => {
  for (const events of [anthropicEvents(), openaiEvents(), responsesEvents()]) {
    assert.ok(events.length >= 12 && events.length <= 16, `${events.length} events`);
    for (const event of events) assert.match(event, /^(event: [\w.]+\n)?data: .+\n\n$/);
  }
  assert.match(anthropicEvents().at(-1)!, /message_stop/);
  assert.equal(openaiEvents().at(-1), "data: [DONE]\n\n");
  assert.equal(new TextDecoder().decode(STREAM_MARKER), '"stream":true');
});

Deno.test("parseProcStatus() reads VmRSS and the peak VmHWM in bytes", () => {
  const text = "Name:\tdeno\nVmPeak:\t 999 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n";
  assert.deepEqual(parseProcStatus(text), { rssBytes: 100 * 1024 * 1024, peakRssBytes: 200 * 1024 * 1024 });
});

Deno.test("parseProcStatus() throws naming the missing field", () => {
  assert.throws(() => parseProcStatus("Name:\tdeno\nVmRSS:\t1 kB\n"), /VmHWM/);
});

Deno.test("parseProcStat() adds utime and stime even when the process name holds spaces and parentheses", () => {
  const text = "4242 (deno (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 731 269 0 0 20 0 9 0 123 456 789\n";
  assert.equal(parseProcStat(text), 1000);
});

Deno.test("createFakeUpstream() streams the long answer's 2,000 events for its model, ending with message_stop", async () => {
  const text = await readText(await post("/v1/messages", { model: LONG_MODEL, stream: true }));
  const events = text.split("\n\n").filter((e) => e !== "");
  assert.equal(events.length, LONG_EVENTS);
  assert.match(events.at(-1)!, /message_stop/);
  assert.match(events.at(-2)!, new RegExp(`"output_tokens":${LONG_EVENTS - 6}`));
});

Deno.test("createFakeUpstream() streams as many MB of text as answer_mb asks for its large model", async () => {
  const text = await readText(
    await post("/v1/messages", { model: LARGE_MODEL, stream: true, messages: "answer_mb:2" }),
  );
  const events = text.split("\n\n").filter((e) => e !== "").map((e) => JSON.parse(e.slice(e.indexOf("data: ") + 6)));
  const deltas = events.filter((e) => e.type === "content_block_delta").map((e) => e.delta.text as string);
  assert.equal(deltas.join("").length, 2 * 1024 * 1024);
  assert.ok(deltas.every((delta) => delta.length === LARGE_DELTA_BYTES));
  assert.equal(events.at(-1).type, "message_stop");
});

Deno.test("createFakeUpstream() paces its paced model's events one chunk at a time, waiting the drawn gap", async () => {
  const gaps: number[] = [];
  const paced = createFakeUpstream({ pacedGapMs: () => (gaps.push(0), 0) });
  const res = await paced(
    new Request("http://127.0.0.1:1/v1/messages", {
      method: "POST",
      body: JSON.stringify({ model: PACED_MODEL, stream: true }),
    }),
  );
  await using body = bodyReader(res);
  const chunks: string[] = [];
  for (let chunk = await body.next(); chunk !== undefined; chunk = await body.next()) chunks.push(chunk);
  assert.equal(chunks.length, PACED_EVENTS);
  assert.equal(gaps.length, PACED_EVENTS - 1);
  assert.match(chunks[0], /message_start/);
  assert.match(chunks.at(-1)!, /message_stop/);
});

Deno.test("parseMachineStat() sums the machine's CPU ticks and picks out steal", () => {
  const text = "cpu  100 5 50 800 10 1 2 32 0 0\ncpu0 50 2 25 400 5 0 1 16 0 0\nintr 1\n";
  assert.deepEqual(parseMachineStat(text), { totalTicks: 1000, stealTicks: 32 });
  assert.throws(() => parseMachineStat("intr 1\n"), /CPU times from \/proc\/stat/);
});

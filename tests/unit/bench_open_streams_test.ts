import assert from "node:assert/strict";
import { createFakeUpstream, PACED_EVENTS, PACED_MODEL } from "../../bench/fake_upstream.ts";
import { countEvents, openStreamsWave } from "../../bench/open_streams.ts";

const encode = (text: string) => new TextEncoder().encode(text);

const COUNT_CASES = [
  { name: "counts whole events in one chunk", chunk: "data: a\n\ndata: b\n\n", endedWithLf: false, want: 2 },
  { name: "counts nothing in an event still open", chunk: "event: x\ndata: a\n", endedWithLf: false, want: 0 },
  { name: "counts an event whose blank line starts the chunk", chunk: "\ndata: b", endedWithLf: true, want: 1 },
  { name: "does not take a leading LF after a non-LF end for a blank line", chunk: "\n", endedWithLf: false, want: 0 },
  { name: "counts an empty chunk as nothing", chunk: "", endedWithLf: true, want: 0 },
];
for (const c of COUNT_CASES) {
  Deno.test(`countEvents() ${c.name}`, () => assert.equal(countEvents(encode(c.chunk), c.endedWithLf), c.want));
}

Deno.test("openStreamsWave() reads every paced stream to its end and reports events, RSS and CPU", async () => {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    createFakeUpstream({ pacedGapMs: () => 1 }),
  );
  try {
    const result = await openStreamsWave({
      url: `http://127.0.0.1:${server.addr.port}/v1/messages`,
      body: JSON.stringify({ model: PACED_MODEL, stream: true }),
      headers: { "content-type": "application/json" },
    }, { pid: Deno.pid, streams: 20, rampMs: 0, timeoutMs: 15_000 });
    assert.equal(result.streams, 20);
    assert.equal(result.completed, 20);
    assert.equal(result.events, 20 * PACED_EVENTS);
    assert.ok(result.rssPeakBytes >= result.rssBeforeBytes && result.rssBeforeBytes > 0);
    assert.ok(result.cpuUsPerEvent > 0 && Number.isFinite(result.cpuUsPerEvent), `${result.cpuUsPerEvent}`);
  } finally {
    await server.shutdown();
  }
});

Deno.test("openStreamsWave() counts a stream the server refuses as not complete", async () => {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("no", { status: 429 }),
  );
  try {
    const result = await openStreamsWave(
      { url: `http://127.0.0.1:${server.addr.port}/v1/messages`, body: "{}", headers: {} },
      { pid: Deno.pid, streams: 3, rampMs: 0, timeoutMs: 15_000 },
    );
    assert.deepEqual([result.completed, result.events], [0, 0]);
  } finally {
    await server.shutdown();
  }
});

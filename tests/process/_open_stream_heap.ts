/**
 * @module Run by open_stream_heap_test.ts under `--v8-flags=--expose-gc`: opens streams with large prompts through a
 * test gateway, holds them open at their first event, collects garbage and prints how much the JS heap grew.
 */
import { bodyReader, messagesBody, startGateway } from "../_helpers.ts";
import { controlledStream, fakeUpstream } from "../_fake_upstream.ts";

const STREAMS = 8;
const PROMPT_BYTES = 1_000_000;
const gc = (globalThis as unknown as { gc(): void }).gc;

await using upstream = fakeUpstream();
const open: ReturnType<typeof controlledStream>[] = [];
upstream.routes.set("POST /anth/v1/messages", () => {
  const stream = controlledStream();
  stream.send('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\n');
  open.push(stream);
  return stream.response;
});
await using gw = await startGateway(upstream.url);
// The fake upstream keeps what it saw; only the gateway's own holding is measured.
const forget = () => upstream.requests.splice(0);
gc();
const before = Deno.memoryUsage().heapUsed;
const bodies = [];
for (let i = 0; i < STREAMS; i++) {
  const prompt = [{ role: "user", content: "x".repeat(PROMPT_BYTES) }];
  const res = await gw.post("/v1/messages", messagesBody({ stream: true, messages: prompt }));
  const body = bodyReader(res);
  await body.next();
  bodies.push(body);
}
forget();
gc();
const grownPerStream = (Deno.memoryUsage().heapUsed - before) / STREAMS;
for (const stream of open) stream.end();
for (const body of bodies) await body[Symbol.asyncDispose]();
console.log(JSON.stringify({ grownPerStream, promptBytes: PROMPT_BYTES }));

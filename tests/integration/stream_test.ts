/** @module Streamed passthrough: bytes as they arrive, usage observed, disconnects, cuts and stalls reported in-band. */
import assert from "node:assert/strict";
import { SseParser } from "../../src/core/sse.ts";
import { controlledStream, fakeUpstream, hang, jsonReply, sseReply } from "../_fake_upstream.ts";
import {
  anthropicMessage,
  bodyReader,
  firstEvent,
  fixture,
  leaveWhileUpstreamWaits,
  messagesBody,
  readSse,
  readText,
  startGateway,
  waitFor,
  within,
} from "../_helpers.ts";

const FIXTURE = fixture("anthropic_text.sse");
const FIRST_EVENT = firstEvent(FIXTURE);

Deno.test("a stream reaches the client byte for byte, with SSE headers and usage recorded", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(FIXTURE));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody({ stream: true }));
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(res.headers.get("cache-control"), "no-cache");
  assert.equal(res.headers.get("content-length"), null);
  assert.equal(await readText(res), FIXTURE);
  const exchange = gw.exchanges.at(-1)!;
  assert.deepEqual(exchange.usage, {
    input_tokens: 9,
    output_tokens: 3,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  });
  assert.equal(exchange.usage_complete, true);
  assert.equal(exchange.stream, true);
});

const CHAT_USAGE = { input_tokens: 20, output_tokens: 12, cache_read_input_tokens: 10, cache_creation_input_tokens: 0 };

Deno.test("an OpenAI chat stream that asked for usage passes through byte for byte, usage counted once", async () => {
  await using upstream = fakeUpstream();
  const chat = fixture("openai_chat_text.sse");
  upstream.routes.set("POST /oai/v1/chat/completions", () => sseReply(chat));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/chat/completions", {
    model: "gpt-test",
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "Hi" }],
  }, { "x-api-key": "", authorization: `Bearer ${gw.tokens.oa}` });
  assert.equal(res.status, 200);
  assert.equal(await readText(res), chat);
  assert.deepEqual(gw.exchanges.at(-1)!.usage, CHAT_USAGE);
});

Deno.test("an OpenAI chat stream that did not ask for usage is counted, and the usage chunk kept from it", async () => {
  await using upstream = fakeUpstream();
  const chat = fixture("openai_chat_text.sse");
  upstream.routes.set("POST /oai/v1/chat/completions", () => sseReply(chat));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/chat/completions", {
    model: "gpt-test",
    stream: true,
    stream_options: { other: 1 },
    messages: [{ role: "user", content: "Hi" }],
  }, { "x-api-key": "", authorization: `Bearer ${gw.tokens.oa}` });
  assert.equal(res.status, 200);
  const events = await readSse(res);
  const expected = new SseParser().push(chat).filter((e) => !e.data.includes('"choices":[]'));
  assert.deepEqual(events, expected);
  assert.deepEqual(upstream.requests[0].body?.stream_options, { other: 1, include_usage: true });
  assert.deepEqual(gw.exchanges.at(-1)!.usage, CHAT_USAGE);
});

Deno.test("a chat stream whose usage the gateway added still ends in an error when the upstream stops early", async () => {
  await using upstream = fakeUpstream();
  // The first content chunk, then a clean close: no finish_reason, no usage chunk, no [DONE].
  const partial = firstEvent(fixture("openai_chat_text.sse"));
  upstream.routes.set("POST /oai/v1/chat/completions", () => sseReply(partial));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/chat/completions", {
    model: "gpt-test",
    stream: true,
    messages: [{ role: "user", content: "Hi" }],
  }, { "x-api-key": "", authorization: `Bearer ${gw.tokens.oa}` });
  assert.equal(res.status, 200);
  const text = await readText(res);
  assert.ok(text.startsWith(partial), "what the upstream sent reaches the client");
  assert.ok(!text.includes("[DONE]"), "no normal ending");
  assert.match(text, /"error":\{[^}]*ended the stream before it finished/);
  assert.equal(gw.exchanges.at(-1)!.usage_complete, false);
});

Deno.test("the first event reaches the client before the upstream has finished", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  upstream.routes.set("POST /anth/v1/messages", () => stream.response);
  await using gw = await startGateway(upstream.url);
  const pending = gw.post("/v1/messages", messagesBody({ stream: true }));
  stream.send(FIRST_EVENT);
  await using body = bodyReader(await pending);
  const first = await body.next();
  assert.equal(first, FIRST_EVENT);
  stream.send(FIXTURE.slice(FIRST_EVENT.length));
  stream.end();
  const rest = await body.rest();
  assert.equal(first + rest, FIXTURE);
});

Deno.test("a client that disconnects cancels the upstream request", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  upstream.routes.set("POST /anth/v1/messages", () => stream.response);
  await using gw = await startGateway(upstream.url);
  const pending = gw.post("/v1/messages", messagesBody({ stream: true }));
  stream.send(FIRST_EVENT);
  await using body = bodyReader(await pending);
  await body.next();
  await body.cancel();
  await within(upstream.requests[0].closed, 2000, "the upstream request closing");
  assert.equal(upstream.open(), 0);
  const exchange = await waitFor(() => gw.exchanges.at(-1));
  assert.equal(exchange.usage_complete, false);
});

const CUTS = [
  { name: "a connection cut mid-event", end: (s: ReturnType<typeof controlledStream>) => s.cut() },
  { name: "a clean close before message_stop", end: (s: ReturnType<typeof controlledStream>) => s.end() },
];

for (const c of CUTS) {
  Deno.test(`${c.name} ends the client stream with an error event and no message_stop`, async () => {
    await using upstream = fakeUpstream();
    const stream = controlledStream();
    upstream.routes.set("POST /anth/v1/messages", () => stream.response);
    await using gw = await startGateway(upstream.url);
    const pending = gw.post("/v1/messages", messagesBody({ stream: true }));
    const partial = FIRST_EVENT + 'event: content_block_start\ndata: {"type":"content_bl';
    stream.send(partial);
    await using body = bodyReader(await pending);
    let text = await body.until((sent) => sent.length >= partial.length);
    c.end(stream);
    text += await body.rest();
    const events = new SseParser().push(text);
    assert.equal(events[0].event, "message_start");
    assert.equal(events.at(-1)!.event, "error");
    assert.equal(JSON.parse(events.at(-1)!.data).error.type, "api_error");
    assert.ok(!events.some((e) => e.event === "message_stop"));
    assert.equal((await waitFor(() => gw.exchanges.at(-1))).error, "upstream");
  });
}

Deno.test("an upstream that falls silent mid-stream is failed as a timeout after the idle limit", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  upstream.routes.set("POST /ha1/v1/messages", () => stream.response);
  await using gw = await startGateway(upstream.url, { idleTimeoutMs: 150 });
  const pending = gw.post("/v1/messages", messagesBody({ model: "claude-ha", stream: true }));
  stream.send(FIRST_EVENT);
  const events = await readSse(await pending);
  assert.equal(events.at(-1)!.event, "error");
  assert.equal(JSON.parse(events.at(-1)!.data).error.type, "timeout_error");
  await within(upstream.requests[0].closed, 2000, "the upstream request closing");
  assert.equal(upstream.requests.length, 1, "no failover after the first byte");
});

Deno.test("a client that gives up on a non-streamed request closes the upstream request at once", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", hang);
  await using gw = await startGateway(upstream.url);
  await leaveWhileUpstreamWaits(gw, upstream);
  assert.equal(upstream.open(), 0);
});

Deno.test("hop-by-hop and unknown upstream response headers never reach the client", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () =>
    new Response(FIXTURE, {
      headers: {
        "content-type": "text/event-stream",
        connection: "keep-alive, x-hop",
        "keep-alive": "timeout=5",
        "x-hop": "1",
        "set-cookie": "upstream=1",
        server: "upstream-server",
      },
    }));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody({ stream: true }));
  await readText(res);
  for (const name of ["keep-alive", "x-hop", "set-cookie", "server"]) assert.equal(res.headers.get(name), null, name);
});

Deno.test("clients that give up do not make a healthy upstream cool down", async () => {
  await using upstream = fakeUpstream();
  let calls = 0;
  upstream.routes.set("POST /anth/v1/messages", (seen) => ++calls <= 2 ? hang(seen) : jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { failureThreshold: 1 });
  for (let i = 0; i < 2; i++) await leaveWhileUpstreamWaits(gw, upstream, i);
  const health = await (await fetch(`${gw.url}/healthz`)).json();
  assert.deepEqual(health.upstreams.anth.models["claude-test"], {
    state: "ok",
    cooling_until: null,
    recent_failures: 0,
  });
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 200);
  await res.body?.cancel();
  assert.equal(
    (await waitFor(() => gw.exchanges.find((e) => e.attempts[0]?.outcome === "client_closed")))?.status,
    499,
  );
});

Deno.test("a finished stream's upstream connection is kept for the next request", async () => {
  const connections = new Set<number>();
  const events = FIXTURE.split("\n\n").filter(Boolean).map((e) => new TextEncoder().encode(e + "\n\n"));
  // Chunked, with a pause before the end of the body, as real upstreams send it after message_stop.
  await using upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (_req, info) => {
    connections.add((info.remoteAddr as Deno.NetAddr).port);
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (next < events.length) controller.enqueue(events[next++]);
        else controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  await using gw = await startGateway(`http://127.0.0.1:${upstream.addr.port}`);
  for (let i = 0; i < 10; i++) {
    assert.equal(await readText(await gw.post("/v1/messages", messagesBody({ stream: true }))), FIXTURE);
  }
  assert.ok(connections.size <= 3, `${connections.size} upstream connections for 10 streams`);
});

/**
 * @module Chaos on loopback: 500 requests (waves of 100 concurrent, half of them streams) against two upstreams per
 * model that fail at random in every way the relay handles. Every response must be a complete body or stream or a
 * well-formed error in the client's protocol, and nothing may be left open afterwards.
 */
import assert from "node:assert/strict";
import { SseParser } from "../../src/core/sse.ts";
import {
  chatCompletion,
  deliberateCut,
  fakeUpstream,
  hang,
  jsonReply,
  type Responder,
  sseReply,
} from "../_fake_upstream.ts";
import {
  anthropicMessage,
  deadlineFetch,
  firstEvent,
  fixture,
  messagesBody,
  readText,
  startGateway,
} from "../_helpers.ts";

const ANTHROPIC_SSE = fixture("anthropic_text.sse");
const CHAT_SSE = fixture("openai_chat_text.sse");
const WAVES = 5;
const PER_WAVE = 100;

/** A small seeded PRNG so a failing run can be replayed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function partialStream(text: string, tail: "cut" | "error", chat: boolean): Response {
  const first = firstEvent(text);
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(first));
      if (tail === "cut") return void queueMicrotask(() => controller.error(deliberateCut()));
      controller.enqueue(encoder.encode(
        chat
          ? 'data: {"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}\n\n'
          : 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
      ));
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

function chaosResponder(random: () => number, chat: boolean): Responder {
  return async (seen, req) => {
    const stream = seen.body?.stream === true;
    const roll = random();
    if (roll < 0.08) return jsonReply({ error: { message: "boom" } }, 500);
    if (roll < 0.14) return jsonReply({ error: { message: "busy" } }, 529, { "retry-after": "0" });
    if (roll < 0.18) return jsonReply({ error: { message: "slow down" } }, 429);
    if (roll < 0.21) return new Response("<html>bad gateway</html>", { status: 502 });
    if (roll < 0.23) return await hang(seen);
    if (stream && roll < 0.27) return partialStream(chat ? CHAT_SSE : ANTHROPIC_SSE, "cut", chat);
    if (stream && roll < 0.30) return partialStream(chat ? CHAT_SSE : ANTHROPIC_SSE, "error", chat);
    if (roll < 0.35) await new Promise((resolve) => setTimeout(resolve, 5 + Math.floor(random() * 20)));
    if (req.signal.aborted) return new Response(null, { status: 499 });
    if (stream) return sseReply(chat ? CHAT_SSE : ANTHROPIC_SSE);
    return jsonReply(chat ? chatCompletion() : anthropicMessage());
  };
}

/** Checks one response and names its class: "ok", or "error:<type>" for a well-formed error. */
async function classify(res: Response, chat: boolean, stream: boolean): Promise<string> {
  const text = await readText(res);
  if (res.status !== 200) {
    const body = JSON.parse(text);
    const type = chat ? body.error?.type : body.type === "error" && body.error?.type;
    assert.ok(typeof type === "string" && typeof (chat ? body.error.message : body.error.message) === "string", text);
    return `error:${res.status}:${type}`;
  }
  if (!stream) {
    const body = JSON.parse(text);
    assert.equal(chat ? body.object : body.type, chat ? "chat.completion" : "message", text);
    return "ok";
  }
  const events = new SseParser().push(text);
  const last = events.at(-1)!;
  if (chat) {
    if (last.data === "[DONE]") return "ok";
    assert.ok(JSON.parse(last.data).error?.message, `chat stream ended neither done nor in error: ${text}`);
    return "error:in-band";
  }
  assert.equal(events[0].event, "message_start", text);
  if (last.event === "message_stop") return "ok";
  assert.equal(last.event, "error", `stream ended neither stopped nor in error: ${text}`);
  assert.ok(!events.some((e) => e.event === "message_stop"));
  return `error:in-band:${JSON.parse(last.data).error.type}`;
}

Deno.test("chaos: 500 requests against randomly failing upstreams all end well-formed", async () => {
  const random = prng(20261122);
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /ha1/v1/messages", chaosResponder(random, false));
  upstream.routes.set("POST /ha2/v1/messages", chaosResponder(random, false));
  upstream.routes.set("POST /hb1/v1/chat/completions", chaosResponder(random, true));
  upstream.routes.set("POST /hb2/v1/chat/completions", chaosResponder(random, true));
  const heapBefore = Deno.memoryUsage().heapUsed;
  const counts: Record<string, number> = {};
  let failedOver = 0;
  let streams = 0;
  {
    await using gw = await startGateway(upstream.url, { timeoutMs: 300, idleTimeoutMs: 1000 });
    for (let wave = 0; wave < WAVES; wave++) {
      await Promise.all(Array.from({ length: PER_WAVE }, async (_, i) => {
        const chat = i % 4 === 1 || i % 4 === 3;
        const stream = i % 2 === 0;
        if (stream) streams++;
        const res = chat
          ? await deadlineFetch()(`${gw.url}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${gw.tokens.oa}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "gpt-ha", stream, messages: [{ role: "user", content: "Hi" }] }),
          })
          : await gw.post("/v1/messages", messagesBody({ model: "claude-ha", stream }));
        const kind = await classify(res, chat, stream);
        counts[kind] = (counts[kind] ?? 0) + 1;
      }));
    }
    for (const exchange of gw.exchanges) {
      if (exchange.attempts.length > 1 && exchange.attempts.at(-1)!.outcome === "ok") failedOver++;
    }
    assert.equal(gw.exchanges.length, WAVES * PER_WAVE, "every exchange finished");
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  assert.equal(total, WAVES * PER_WAVE);
  assert.equal(upstream.open(), 0, "upstream connections left open");
  assert.ok(counts.ok > total / 2, `too few successes: ${JSON.stringify(counts)}`);
  assert.ok(failedOver > 0);
  const heapGrowthMb = (Deno.memoryUsage().heapUsed - heapBefore) / 1e6;
  assert.ok(heapGrowthMb < 64, `heap grew ${heapGrowthMb.toFixed(1)} MB`);
  console.log(
    `chaos: ${total} requests (${streams} streams, ${PER_WAVE} concurrent): ${counts.ok} ok, ${failedOver} ok after failover; ` +
      `errors ${JSON.stringify(Object.fromEntries(Object.entries(counts).filter(([k]) => k !== "ok")))}; ` +
      `heap ${heapGrowthMb.toFixed(1)} MB`,
  );
});

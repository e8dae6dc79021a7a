/**
 * Tests for the stream relay's limits under the shared watchdog, driven tick by tick with a hand-set clock: the
 * idle limit, the total limit and keep-alives fire from the ticks (and keep-alives only where a passthrough event
 * has ended), the stream stops being watched when it ends, and a client that leaves aborts the upstream.
 */
import assert from "node:assert/strict";
import { within } from "../_reads.ts";
import type { Watchdog, Watched } from "../../src/core/watchdog.ts";
import { DRAIN_MS, relayStream, type RelayStreamOptions, type StreamEnd } from "../../src/relay/stream.ts";
import { usageMeter } from "../../src/usage/meter.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const PING = 'event: ping\ndata: {"type":"ping"}\n\n';
const START = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":5}}}\n\n';
const STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

/** A watchdog whose clock and ticks the test moves. */
function manualWatchdog() {
  const watched = new Set<Watched>();
  let clock = 1_000_000;
  const watchdog: Watchdog = {
    watch: (item) => void watched.add(item),
    unwatch: (item) => void watched.delete(item),
    now: () => clock,
  };
  return {
    watchdog,
    watched,
    /** Moves the clock by `ms` and runs one tick, `times` over. */
    tick(ms: number, times = 1) {
      for (let i = 0; i < times; i++) {
        clock += ms;
        for (const item of watched) item.check(clock);
      }
    },
  };
}

/** An upstream body the test writes to, a relay over it, and the client's side of the relay. */
function relay(options: Partial<RelayStreamOptions>) {
  let upstreamBody!: ReadableStreamDefaultController<Uint8Array>;
  const bodyCancelled = Promise.withResolvers<void>();
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (upstreamBody = c),
    cancel: () => bodyCancelled.resolve(),
  });
  const upstream = new AbortController();
  const ended = Promise.withResolvers<StreamEnd>();
  const meter = usageMeter("anthropic");
  const client = relayStream(body.getReader(), new Uint8Array(0), {
    protocol: "anthropic",
    meter,
    upstream,
    upstreamName: "up",
    onFirstByte() {},
    onEnd: ended.resolve,
    ...options,
  }).getReader();
  return {
    upstream,
    meter,
    ended: ended.promise,
    bodyCancelled: bodyCancelled.promise,
    close: () => upstreamBody.close(),
    send: (text: string) => upstreamBody.enqueue(encoder.encode(text)),
    read: async () => {
      const { value, done } = await within(client.read(), 5000, "a chunk from the relay");
      return done ? undefined : decoder.decode(value);
    },
    async [Symbol.asyncDispose]() {
      await client.cancel().catch(() => {});
    },
  };
}

Deno.test("relayStream() fails a stream silent past the idle limit with an in-band error, checked by the watchdog", async () => {
  const dog = manualWatchdog();
  await using r = relay({ watchdog: dog.watchdog, idleMs: 1000 });
  r.send(START);
  assert.equal(await r.read(), START);
  // Ticks every tenth of the limit: the first sees the chunk, ten more make the limit.
  dog.tick(100, 10);
  assert.equal(r.upstream.signal.aborted, false);
  dog.tick(100);
  const error = await r.read();
  assert.match(error!, /^event: error\ndata: .*"type":"timeout_error"/);
  assert.match(error!, /sent nothing for 1000 ms/);
  assert.equal(await r.read(), undefined);
  assert.equal((await r.ended).error?.kind, "timeout");
  assert.equal(dog.watched.size, 0);
});

Deno.test("relayStream() counts a chunk heard as activity from the tick that sees it", async () => {
  const dog = manualWatchdog();
  await using r = relay({ watchdog: dog.watchdog, idleMs: 1000 });
  r.send(START);
  assert.equal(await r.read(), START);
  dog.tick(900);
  r.send('event: ping\ndata: {"type":"ping"}\n\n');
  await r.read();
  dog.tick(900);
  dog.tick(900);
  assert.equal(r.upstream.signal.aborted, false, "900 ms after the tick that saw the chunk");
  dog.tick(100);
  assert.equal(r.upstream.signal.aborted, true);
});

Deno.test("relayStream() ends a stream at its total time limit even while the upstream keeps talking", async () => {
  const dog = manualWatchdog();
  await using r = relay({ watchdog: dog.watchdog, totalMs: 5000, idleMs: 1000 });
  r.send(START);
  assert.equal(await r.read(), START);
  for (let i = 0; i < 4; i++) {
    dog.tick(999);
    r.send(PING);
    assert.equal(await r.read(), PING);
  }
  dog.tick(1004);
  assert.match((await r.read())!, /did not answer within its total time limit/);
  assert.equal((await r.ended).error?.kind, "timeout");
});

Deno.test("relayStream() sends a keep-alive after silence toward the client, but never inside a passthrough event", async () => {
  const dog = manualWatchdog();
  await using r = relay({ watchdog: dog.watchdog, keepAliveMs: 100 });
  r.send(START);
  assert.equal(await r.read(), START);
  // The first tick sees the send, two more make the keep-alive interval.
  dog.tick(50, 3);
  assert.equal(await r.read(), PING);
  // Half an event: a ping now would land inside it, so none is sent however long the silence lasts.
  r.send('event: content_block_delta\ndata: {"type":"content_block_delta",');
  await r.read();
  dog.tick(50, 10);
  r.send('"index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n');
  assert.match((await r.read())!, /^"index":0/);
  dog.tick(50, 3);
  assert.equal(await r.read(), PING);
  r.send(STOP);
  r.close();
  assert.equal(await r.read(), STOP);
  assert.equal(await r.read(), undefined);
  assert.deepEqual(await r.ended, { error: undefined, cancelled: false });
  assert.equal(r.meter.usage()?.input_tokens, 5);
});

Deno.test("relayStream() aborts the upstream and stops being watched when the client leaves", async () => {
  const dog = manualWatchdog();
  await using r = relay({ watchdog: dog.watchdog, idleMs: 1000, keepAliveMs: 100 });
  r.send(START);
  assert.equal(await r.read(), START);
  assert.equal(dog.watched.size, 1);
  await r[Symbol.asyncDispose]();
  assert.equal(r.upstream.signal.aborted, true);
  assert.deepEqual(await r.ended, { cancelled: true });
  assert.equal(dog.watched.size, 0);
});

Deno.test("relayStream() lets go of an upstream that holds its connection open after the last event", async () => {
  const dog = manualWatchdog();
  await using r = relay({ watchdog: dog.watchdog });
  r.send(START + STOP);
  assert.equal(await r.read(), START + STOP);
  assert.equal(await r.read(), undefined);
  // No limit was set, so only the drain of the rest of the body is watched.
  assert.equal(dog.watched.size, 1);
  dog.tick(DRAIN_MS - 1);
  dog.tick(1);
  await within(r.bodyCancelled, 5000, "the upstream body being cancelled");
  // One turn of the event loop for the drain to see its read end.
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(dog.watched.size, 0);
});

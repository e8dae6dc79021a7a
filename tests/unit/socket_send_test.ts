/**
 * @module socketSender(): a response's events wait while the client is behind, and only then; the socket's own
 * events queue behind the client, in order, and past their bound the sender gives up on the client.
 */
import assert from "node:assert/strict";
import { socketSender } from "../../src/handlers/socket/send.ts";
import { waitFor } from "../_helpers.ts";

/** A socket stand-in whose buffered bytes the test sets; each pause lets the test drain it a step. */
function fakeSocket() {
  const socket = {
    readyState: 1,
    bufferedAmount: 0,
    sent: [] as string[],
    send(text: string) {
      socket.sent.push(text);
      socket.bufferedAmount += text.length;
    },
  };
  return socket;
}

const never = () => Promise.reject(new Error("waited"));
const options = { highWater: 100, lowWater: 10, maxQueued: 1000, overflow: () => assert.fail("overflow") };

Deno.test("socketSender() sends without waiting while the client keeps up", () => {
  const socket = fakeSocket();
  const sender = socketSender(socket, { ...options, pause: never });
  assert.equal(sender.stream("x".repeat(50)), undefined);
  sender.event("e".repeat(10));
  assert.equal(sender.stream("y".repeat(30)), undefined);
  assert.deepEqual(socket.sent.map((t) => t.length), [50, 10, 30]);
});

Deno.test("socketSender() waits past the high-water mark until the buffer is down to the low-water mark", async () => {
  const socket = fakeSocket();
  let pauses = 0;
  // Each pause, the client takes 40 bytes.
  const pause = () => {
    pauses++;
    socket.bufferedAmount = Math.max(0, socket.bufferedAmount - 40);
    return Promise.resolve();
  };
  const sender = socketSender(socket, { ...options, pause });
  assert.equal(sender.stream("x".repeat(90)), undefined);
  const behind = sender.stream("y".repeat(30));
  assert.ok(behind, "past the high-water mark the sender waits");
  await behind;
  assert.ok(socket.bufferedAmount <= 10);
  assert.equal(pauses, 3);
});

Deno.test("socketSender() queues its own events behind a client that is behind, and sends them in order", async () => {
  const socket = fakeSocket();
  let release = () => {};
  const pause = () => new Promise<void>((resolve) => release = () => (socket.bufferedAmount = 0, resolve()));
  const sender = socketSender(socket, { ...options, lowWater: 50, pause });
  assert.ok(sender.stream("x".repeat(150)));
  sender.event("error 1");
  const next = sender.stream("stream 2");
  sender.event("error 2");
  assert.deepEqual(socket.sent.length, 1, "nothing more goes out while the client is behind");
  assert.equal(sender.queued(), "error 1".length + "error 2".length);
  release();
  await next;
  // The last of the held texts goes out after the stream's wait is over.
  await waitFor(() => socket.sent.length === 4 || undefined);
  assert.deepEqual(socket.sent.slice(1), ["error 1", "stream 2", "error 2"]);
  assert.equal(sender.queued(), 0);
});

Deno.test("socketSender() gives up on a client whose queued events pass their bound, once", () => {
  const socket = fakeSocket();
  let overflows = 0;
  const sender = socketSender(socket, {
    ...options,
    maxQueued: 100,
    pause: () => new Promise(() => {}),
    overflow: () => overflows++,
  });
  sender.event("x".repeat(150));
  for (let i = 0; i < 20; i++) sender.event("e".repeat(10));
  assert.equal(overflows, 1);
  assert.equal(socket.sent.length, 1);
});

Deno.test("socketSender() stops waiting, and sending, once the socket is closed", async () => {
  const socket = fakeSocket();
  const sender = socketSender(socket, {
    ...options,
    highWater: 10,
    lowWater: 0,
    pause: () => Promise.resolve(void (socket.readyState = 3)),
  });
  await sender.stream("x".repeat(50));
  assert.equal(sender.stream("more"), undefined);
  sender.event("more");
  assert.equal(socket.sent.length, 1);
});

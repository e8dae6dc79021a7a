/** @module pacedSend(): a socket's sender waits while the client is behind, and only then. */
import assert from "node:assert/strict";
import { pacedSend } from "../../src/handlers/socket_send.ts";

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

Deno.test("pacedSend() sends without waiting while the client keeps up", () => {
  const socket = fakeSocket();
  const send = pacedSend(socket, { highWater: 100, lowWater: 10, pause: () => Promise.reject(new Error("waited")) });
  assert.equal(send("x".repeat(50)), undefined);
  assert.equal(send("y".repeat(50)), undefined);
  assert.deepEqual(socket.sent.map((t) => t.length), [50, 50]);
});

Deno.test("pacedSend() waits past the high-water mark until the buffer is down to the low-water mark", async () => {
  const socket = fakeSocket();
  let pauses = 0;
  // Each pause, the client takes 40 bytes.
  const pause = () => {
    pauses++;
    socket.bufferedAmount = Math.max(0, socket.bufferedAmount - 40);
    return Promise.resolve();
  };
  const send = pacedSend(socket, { highWater: 100, lowWater: 10, pause });
  assert.equal(send("x".repeat(90)), undefined);
  const behind = send("y".repeat(30));
  assert.ok(behind, "past the high-water mark the sender waits");
  await behind;
  assert.ok(socket.bufferedAmount <= 10);
  assert.equal(pauses, 3);
});

Deno.test("pacedSend() stops waiting, and sending, once the socket is closed", async () => {
  const socket = fakeSocket();
  const send = pacedSend(socket, {
    highWater: 10,
    lowWater: 0,
    pause: () => Promise.resolve(void (socket.readyState = 3)),
  });
  await send("x".repeat(50));
  assert.equal(send("more"), undefined);
  assert.equal(socket.sent.length, 1);
});

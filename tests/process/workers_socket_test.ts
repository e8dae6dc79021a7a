/**
 * @module Responses WebSockets on `serve --workers 2`: each socket stays on the worker that accepted it, and its
 * `store: false` turns continue from that worker's memory of the socket, as on one instance, whichever worker it is.
 */
import assert from "node:assert/strict";
import { fakeUpstream, sseReply } from "../_fake_upstream.ts";
import { fixture } from "../_helpers.ts";
import { create, openSocket } from "../_socket.ts";
import { logLines, workersIn, workersWithToken } from "../_workers.ts";

// Enough that all of them landing on one worker (2 in 2^16) cannot pass for both.
const SOCKETS = 16;

Deno.test("2 workers: every socket's store: false turns continue on the worker that holds it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-socket-" });
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => sseReply(fixture("anthropic_text.sse")));
  try {
    const { gateway, token } = await workersWithToken(dir, upstream.url);
    await using _ = gateway;
    await Promise.all(Array.from({ length: SOCKETS }, async (_, i) => {
      await using socket = await openSocket(gateway.url, { "x-api-key": token });
      socket.send(create({ model: "m1", input: `question ${i}` }));
      const first = (await socket.until("response.completed", "error")).at(-1)!;
      assert.equal(first.type, "response.completed", JSON.stringify(first));
      const id = (first.response as { id: string }).id;
      socket.send(create({ model: "m1", input: `follow-up ${i}`, previous_response_id: id }));
      const second = (await socket.until("response.completed", "error")).at(-1)!;
      assert.equal(second.type, "response.completed", JSON.stringify(second));
    }));
    // Each follow-up reached the upstream with its socket's own first turn before it.
    const followUps = upstream.requests.map((seen) => seen.raw).filter((raw) => raw.includes("follow-up"));
    assert.equal(followUps.length, SOCKETS);
    for (let i = 0; i < SOCKETS; i++) {
      const sent = followUps.find((raw) => raw.includes(`follow-up ${i}"`));
      assert.ok(sent?.includes(`question ${i}"`), `socket ${i}'s follow-up carried its first turn`);
    }
    assert.equal(await gateway.stop(), 0);
    const turns = logLines(gateway).filter((line) => line.event === "request" && line.transport === "websocket");
    assert.equal(turns.length, 2 * SOCKETS);
    assert.deepEqual(workersIn(turns as { worker: number }[]), [1, 2], "the sockets were spread over both workers");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

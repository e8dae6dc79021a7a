/**
 * @module Tests fail instead of hanging: a read of a stream that never ends stops at its deadline and lets the gateway
 * end the exchange, and a stream a test leaves unread fails the test at teardown instead of holding the shutdown.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream } from "../_fake_upstream.ts";
import { bodyReader, firstEvent, fixture, messagesBody, startGateway, within } from "../_helpers.ts";

const FIRST_EVENT = firstEvent(fixture("anthropic_text.sse"));

Deno.test("a read of a stream that never ends fails at its deadline, naming it, and the client is seen to leave", async () => {
  await using upstream = fakeUpstream();
  const silent = controlledStream();
  upstream.routes.set("POST /anth/v1/messages", () => silent.response);
  await using gw = await startGateway(upstream.url);
  const pending = gw.post("/v1/messages", messagesBody({ stream: true }));
  silent.send(FIRST_EVENT);
  await using body = bodyReader(await pending, 100);
  assert.equal(await body.next(), FIRST_EVENT);
  await assert.rejects(body.rest(), { message: "the end of the response did not happen within 100 ms" });
  // The body was cancelled, so the gateway ends the exchange and lets the upstream go.
  await within(upstream.requests[0].closed, 2000, "the upstream request closing");
});

Deno.test("a stream a test leaves unread fails the test at teardown, which still finishes", async () => {
  const upstream = fakeUpstream();
  try {
    const silent = controlledStream();
    upstream.routes.set("POST /anth/v1/messages", () => silent.response);
    const gw = await startGateway(upstream.url, { shutdownGraceMs: 100 });
    const pending = gw.post("/v1/messages", messagesBody({ stream: true }));
    silent.send(FIRST_EVENT);
    // Read once, then forgotten: neither read to its end nor cancelled.
    const body = bodyReader(await pending);
    assert.equal(await body.next(), FIRST_EVENT);
    await assert.rejects(
      within(Promise.resolve(gw[Symbol.asyncDispose]()), 10_000, "the teardown"),
      /still had a response open 100 ms after its shutdown began/,
    );
    // The gateway ended the stream as it does when its grace period runs out.
    assert.match(await body.rest(), /^event: error\ndata: .*shutting down/m);
    await within(upstream.requests[0].closed, 2000, "the upstream request closing");
  } finally {
    await upstream[Symbol.asyncDispose]();
  }
});

/**
 * @module What Responses sockets may hold, over real sockets: warm-ups counted as requests (limits, request log), the
 * socket's memory counted in the bytes its conversations take, the bound over all sockets of the process with the
 * error that names it, and messages held in the in-flight body budget while they wait.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, sseReply } from "../_fake_upstream.ts";
import { fixture, startGateway, waitFor } from "../_helpers.ts";
import { create, openSocket } from "../_socket.ts";

const MESSAGES_PATH = "POST /anth/v1/messages";

Deno.test("a warm-up takes the token's request limit and is logged and recorded as a request", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { requests_per_minute: 1 } });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${secret}` });
  socket.send(create({ generate: false, input: "the whole prompt" }));
  assert.equal((await socket.until("response.completed")).at(-1)!.type, "response.completed");
  socket.send(create({ generate: false, input: "another" }));
  const refused = await socket.next();
  assert.deepEqual([refused.type, refused.status], ["error", 429]);
  assert.match((refused.error as { headers: Record<string, string> }).headers["retry-after"], /^\d+$/);
  assert.equal(upstream.requests.length, 0);
  const warm = await waitFor(() => gw.exchanges.find((e) => e.transport === "websocket" && e.status === 200));
  assert.deepEqual([warm.route, warm.model, warm.token_id, warm.attempts.length], [
    "/v1/responses",
    "claude-test",
    record.id,
    0,
  ]);
  assert.equal(warm.usage?.input_tokens, 0);
  await waitFor(() => gw.logs.find((line) => line.event === "request" && line.status === 429));
  await gw.flush();
  const logged = (await Array.fromAsync(gw.store.kv.list({ prefix: ["request_log"] })))
    .map((entry) => entry.value as Record<string, unknown>)
    .filter((entry) => entry.token_id === record.id && entry.status !== 101);
  assert.deepEqual(logged.map((entry) => entry.status).sort(), [200, 429]);
  assert.ok(logged.every((entry) => entry.transport === "websocket"));
});

Deno.test("a warm-up made whole from a stored response is held to max_body_bytes with its own bytes", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url, { maxBodyBytes: 4096 });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create({ store: true, input: "s".repeat(2500) }));
  const stored = (await socket.until("response.completed")).at(-1)!.response as { id: string };
  // Each part alone is within the limit; the warm-up's 2,000 bytes and the stored 2,500 together are not.
  socket.send(create({ generate: false, store: true, previous_response_id: stored.id, input: "w".repeat(2000) }));
  const refused = await socket.next();
  assert.deepEqual([refused.status, (refused.error as { param: string }).param], [413, "previous_response_id"]);
  socket.send(create({ generate: false, store: true, previous_response_id: stored.id, input: "w".repeat(200) }));
  assert.equal((await socket.until("response.completed", "error")).at(-1)!.type, "response.completed");
});

Deno.test("a socket's memory counts the bytes its conversation takes: two a character past Latin-1", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url, { extraYaml: "responses_socket: { memory_bytes: 4096 }" });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  // About 2,400 characters of JSON text: 4,800 bytes once held, more than the socket may keep.
  socket.send(create({ input: "日".repeat(2200) }));
  const big = (await socket.until("response.completed")).at(-1)!.response as { id: string };
  socket.send(create({ previous_response_id: big.id, input: "next" }));
  const refused = await socket.next();
  assert.equal((refused.error as { code: string }).code, "previous_response_not_found");
  assert.match((refused.error as { message: string }).message, /larger than responses_socket\.memory_bytes \(4096\)/);
  // A conversation within the bound in bytes is kept (the answer has an emoji: two bytes a character here too).
  socket.send(create({ input: "n".repeat(1500) }));
  const narrow = (await socket.until("response.completed")).at(-1)!.response as { id: string };
  socket.send(create({ previous_response_id: narrow.id, input: "next" }));
  assert.equal((await socket.until("response.completed", "error")).at(-1)!.type, "response.completed");
});

Deno.test("all sockets together keep at most total_memory_bytes; past it a turn is not kept, and says why", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url, { extraYaml: "responses_socket: { total_memory_bytes: 6000 }" });
  const first = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  await using second = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  // Each conversation takes about 4,400 bytes (2,200 characters, two bytes each as the answer has an emoji).
  first.send(create({ input: "a".repeat(2000) }));
  const kept = (await first.until("response.completed")).at(-1)!.response as { id: string };
  second.send(create({ input: "b".repeat(2000) }));
  const lost = (await second.until("response.completed")).at(-1)!.response as { id: string };
  second.send(create({ previous_response_id: lost.id, input: "next" }));
  const refused = await second.next();
  assert.equal((refused.error as { code: string }).code, "previous_response_not_found");
  assert.match((refused.error as { message: string }).message, /total_memory_bytes, 6000/);
  // A warm-up, whose only purpose is what it keeps, is refused at once.
  second.send(create({ generate: false, input: "c".repeat(2000) }));
  const full = await second.next();
  assert.deepEqual([full.status, (full.error as { code: string }).code], [503, "websocket_memory_full"]);
  first.send(create({ previous_response_id: kept.id, input: "next" }));
  assert.equal((await first.until("response.completed", "error")).at(-1)!.type, "response.completed");
  // A socket that closes gives its memory back to the others.
  first.ws.close();
  await first.closed;
  await waitFor(() => gw.deps.sockets.memory.held() === 0 || undefined);
  second.send(create({ input: "d".repeat(2000) }));
  const now = (await second.until("response.completed")).at(-1)!.response as { id: string };
  second.send(create({ previous_response_id: now.id, input: "next" }));
  assert.equal((await second.until("response.completed", "error")).at(-1)!.type, "response.completed");
});

Deno.test("a socket's waiting messages are held in the in-flight body budget: past it one gets a 503", async () => {
  await using upstream = fakeUpstream();
  const held = controlledStream();
  // Should the test fail with the stream still held, the fake upstream can still shut down.
  using _released = { [Symbol.dispose]: () => held.end() };
  let calls = 0;
  upstream.routes.set(MESSAGES_PATH, () => ++calls === 1 ? held.response : sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url, {
    maxBodyBytes: 200_000,
    extraYaml: "max_inflight_body_bytes: 250000",
  });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  const large = (stream: string) => create({ input: "x".repeat(150_000), stream_id: stream });
  // The first runs, its request holding its bytes; the second waits behind it on its stream, holding its own.
  socket.send(large("a"));
  await waitFor(() => upstream.requests[0]);
  socket.send(large("a"));
  const refused = await socket.next();
  assert.deepEqual([refused.status, refused.stream_id], [503, undefined]);
  assert.equal((refused.error as { headers: Record<string, string> }).headers["retry-after"], "1");
  // A small message always fits.
  socket.send(create({ stream_id: "b" }));
  assert.equal((await socket.until("response.completed")).at(-1)!.stream_id, "b");
  held.send(fixture("anthropic/text.sse"));
  held.end();
  assert.equal((await socket.until("response.completed")).at(-1)!.stream_id, "a");
  await waitFor(() => gw.deps.bodyBudget.inFlight() === 0 || undefined);
  socket.send(large("a"));
  assert.equal((await socket.until("response.completed", "error")).at(-1)!.type, "response.completed");
});

/**
 * @module GET /v1/responses over a WebSocket: the same events as the SSE stream of POST /v1/responses, on an
 * Anthropic and a chat upstream; continuation from the socket's memory under store: false and from KV; warm-ups;
 * and the handshake's refusals, which are the HTTP route's own.
 */
import assert from "node:assert/strict";
import { chatCompletion, fakeUpstream, sseReply } from "../_fake_upstream.ts";
import { deadlineFetch, fixture, readSse, startGateway } from "../_helpers.ts";
import { create, openSocket, rawHandshake } from "../_socket.ts";

const MESSAGES_PATH = "POST /anth/v1/messages";
const CHAT_PATH = "POST /oai/v1/chat/completions";

Deno.test("response.create on a socket sends the events of POST /v1/responses' stream, one message each", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/responses", { model: "claude-test", input: "Hi", store: false, stream: true });
  const overHttp = (await readSse(res)).map((m) => JSON.parse(m.data));
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create());
  const overSocket = await socket.until("response.completed");
  assert.deepEqual(overSocket.map((e) => e.type), overHttp.map((e) => e.type));
  const text = (events: Record<string, unknown>[]) => events.filter((e) => e.type === "response.output_text.delta");
  assert.deepEqual(text(overSocket).map((e) => e.delta), ["Héllo, ", "wörld 🌍"]);
  assert.deepEqual(text(overSocket).map((e) => e.delta), text(overHttp).map((e) => e.delta));
  assert.equal(upstream.requests[1].body!.stream, true);
  assert.equal(upstream.requests[1].headers.get("x-api-key"), "upstream-anthropic-key");
  const [http, ws] = gw.exchanges.filter((e) => e.route === "/v1/responses" && e.method === "POST");
  assert.equal(http.transport, undefined);
  assert.equal(ws.transport, "websocket");
  assert.equal(ws.status, 200);
  assert.equal(ws.stream, true);
  assert.equal(ws.usage?.input_tokens, 12);
  const line = gw.logs.find((l) => l.event === "request" && l.transport === "websocket");
  assert.equal(line?.model, "claude-test");
});

Deno.test("a store: false turn continues the socket's last response: the upstream gets the whole conversation", async () => {
  await using upstream = fakeUpstream();
  let n = 0;
  upstream.routes.set(CHAT_PATH, () => sseReply(chatStream(`answer ${++n}`)));
  await using gw = await startGateway(upstream.url);
  await using socket = await openSocket(gw.url, { "x-api-key": gw.tokens.oa });
  socket.send(create({ model: "gpt-test", input: "first question" }));
  const first = (await socket.until("response.completed")).at(-1)!.response as { id: string };
  socket.send(create({ model: "gpt-test", input: "second question", previous_response_id: first.id }));
  await socket.until("response.completed");
  const sent = upstream.requests[1].body!.messages as { role: string; content: unknown }[];
  assert.deepEqual(sent.map((m) => [m.role, m.content]), [
    ["user", "first question"],
    ["assistant", "answer 1"],
    ["user", "second question"],
  ]);
  // Nothing was stored: the conversation lived only in the socket.
  assert.equal((await gw.store.kv.list({ prefix: ["responses"] }).next()).done, true);
});

Deno.test("an unknown previous_response_id is an error event naming it (a huge one cut), and the socket stays usable", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create({ previous_response_id: "resp_unknown", stream_id: "lane-a" }));
  const error = await socket.next();
  assert.equal(error.type, "error");
  assert.equal(error.status, 400);
  assert.equal(error.stream_id, "lane-a");
  const body = error.error as Record<string, unknown>;
  assert.equal(body.code, "previous_response_not_found");
  assert.equal(body.param, "previous_response_id");
  assert.equal(upstream.requests.length, 0);
  // A huge id is named by its start and its length, not echoed whole.
  socket.send(create({ previous_response_id: `resp_${"x".repeat(300_000)}` }));
  const long = (await socket.next()).error as { code: string; message: string };
  assert.equal(long.code, "previous_response_not_found");
  assert.match(long.message, /'resp_x{59}\.\.\. \(300005 characters\)'/);
  assert.ok(long.message.length < 500, `a message of ${long.message.length} characters`);
  socket.send(create());
  assert.equal((await socket.until("response.completed")).at(-1)!.type, "response.completed");
});

Deno.test("a store: true response is continued from KV on another socket", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  const headers = { authorization: `Bearer ${gw.tokens.default}` };
  let id: string;
  {
    await using socket = await openSocket(gw.url, headers);
    socket.send(create({ store: true, input: "kept" }));
    id = ((await socket.until("response.completed")).at(-1)!.response as { id: string }).id;
  }
  await using other = await openSocket(gw.url, headers);
  other.send(create({ previous_response_id: id, input: "again", store: true }));
  const next = ((await other.until("response.completed")).at(-1)!.response as { id: string }).id;
  const sent = upstream.requests[1].body!.messages as { role: string }[];
  assert.deepEqual(sent.map((m) => m.role), ["user", "assistant", "user"]);
  // On the same socket too, a stored response is continued from KV: each stored turn keeps only its own input.
  other.send(create({ previous_response_id: next, input: "third", store: true }));
  const third = ((await other.until("response.completed")).at(-1)!.response as { id: string }).id;
  const tokenId = gw.exchanges.find((e) => e.transport === "websocket")!.token_id!;
  const [record] = await gw.deps.responses!.load(tokenId, [third]);
  assert.deepEqual(record!.chain, [id, next]);
  assert.equal(record!.input.length, 1);
});

Deno.test("generate: false warms up without an upstream call; the next turn continues its input", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create({ generate: false, input: "the whole prompt", instructions: "Be brief." }));
  const events = await socket.until("response.completed");
  assert.deepEqual(events.map((e) => e.type), ["response.created", "response.completed"]);
  const warm = events[1].response as { id: string; output: unknown[]; usage: { total_tokens: number } };
  assert.deepEqual([warm.output, warm.usage.total_tokens], [[], 0]);
  assert.equal(upstream.requests.length, 0);
  // A warm-up is refused for a model the token's group does not enable, as the turn itself would be.
  socket.send(create({ generate: false, model: "gpt-ha" }));
  const refused = await socket.next();
  assert.deepEqual([refused.status, (refused.error as { param: string }).param], [404, "model"]);
  socket.send(create({ previous_response_id: warm.id, input: "go", instructions: "Be brief." }));
  await socket.until("response.completed");
  // Two user turns in a row reach Anthropic as one message of two parts.
  const sent = upstream.requests[0].body!.messages as { content: { text: string }[] }[];
  assert.deepEqual(sent.flatMap((m) => m.content.map((part) => part.text)), ["the whole prompt", "go"]);
});

Deno.test("the handshake refuses a missing, wrong, revoked or expired token with the HTTP route's status and body", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const revoked = await gw.store.createToken({ group: "default" });
  await gw.store.revokeToken(revoked.record.id);
  const expired = await gw.store.createToken({ group: "default", expiresAt: new Date(Date.now() - 1000) });
  const cases: Record<string, string>[] = [
    {},
    { authorization: "Bearer sk-wrong" },
    { "x-api-key": revoked.secret },
    { authorization: `Bearer ${expired.secret}` },
  ];
  for (const headers of cases) {
    const overHttp = await deadlineFetch()(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ model: "claude-test", input: "Hi" }),
    });
    const httpBody = await overHttp.json();
    const refused = await rawHandshake(gw.url, headers);
    assert.equal(refused.status, overHttp.status, JSON.stringify(headers));
    assert.deepEqual(JSON.parse(refused.body), httpBody);
  }
  const ok = await rawHandshake(gw.url, { "x-api-key": gw.tokens.default });
  assert.equal(ok.status, 101);
});

Deno.test("a token revoked while its socket is open gets the HTTP route's 401 as an error event, then a close", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${secret}` });
  await using warming = await openSocket(gw.url, { authorization: `Bearer ${secret}` });
  socket.send(create());
  await socket.until("response.completed");
  await gw.store.revokeToken(record.id);
  // The turn's refusal, and a warm-up's: each socket is then closed, as every later turn would be refused too.
  for (const [open, message] of [[socket, create()], [warming, create({ generate: false })]] as const) {
    open.send(message);
    const refused = await open.next();
    assert.equal(refused.status, 401);
    assert.equal((refused.error as { message: string }).message, "API key is disabled");
    assert.deepEqual(await open.closed, { code: 1008, reason: "API key refused" });
  }
  assert.equal(upstream.requests.length, 1);
  assert.ok(!gw.logs.some((line) => line.event === "internal_error"), "a refusal is not a fault of the gateway");
});

Deno.test("a reasoning item kept in the socket's memory carries the model's signed thinking to the next turn", async () => {
  await using upstream = fakeUpstream();
  let n = 0;
  upstream.routes.set(
    MESSAGES_PATH,
    () => sseReply(fixture(++n === 1 ? "anthropic/reasoning.sse" : "anthropic/text.sse")),
  );
  await using gw = await startGateway(upstream.url);
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  const reasoning = { effort: "low" };
  socket.send(create({ reasoning, input: "Meaning?" }));
  const first = (await socket.until("response.completed")).at(-1)!.response as { id: string; output: unknown[] };
  assert.ok(JSON.stringify(first.output).includes('"encrypted_content"'));
  socket.send(create({ reasoning, previous_response_id: first.id, input: "And?" }));
  await socket.until("response.completed");
  const assistant = (upstream.requests[1].body!.messages as { role: string; content: unknown }[])
    .find((m) => m.role === "assistant")!;
  const thinking = (assistant.content as { type: string; signature?: string }[]).find((b) => b.type === "thinking");
  assert.equal(thinking?.signature, "c2lnbmF0dXJl");
});

/** A chat-completions stream of one text answer. */
function chatStream(text: string): string {
  const chunk = (delta: unknown, finish: string | null) =>
    `data: ${
      JSON.stringify({
        id: "c1",
        object: "chat.completion.chunk",
        model: "gpt-test",
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
    }\n\n`;
  const usage = chatCompletion().usage;
  return chunk({ role: "assistant", content: text }, null) + chunk({}, "stop") +
    `data: ${
      JSON.stringify({ id: "c1", object: "chat.completion.chunk", model: "gpt-test", choices: [], usage })
    }\n\n` +
    "data: [DONE]\n\n";
}

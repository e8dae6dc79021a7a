/**
 * @module The official Anthropic SDK against a model whose upstream speaks OpenAI chat completions: streamed and
 * whole answers, a tool-use round trip, and the SDK's error classes before and during the stream.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { chatCompletion, controlledStream, fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import {
  bodyReader,
  deadlineFetch,
  firstEvent,
  fixture,
  startGateway,
  type TestGateway,
  UPSTREAM_KEYS,
  within,
} from "../_helpers.ts";

const CHAT_PATH = "POST /oai/v1/chat/completions";

function client(url: string, token: string): Anthropic {
  return new Anthropic({ apiKey: token, baseURL: url, maxRetries: 0, fetch: deadlineFetch() });
}

Deno.test("Anthropic SDK messages.stream() and finalMessage() read a chat upstream's stream", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(CHAT_PATH, () => sseReply(fixture("openai-chat/usage_cache.sse")));
  await using gw = await startGateway(upstream.url);
  const stream = client(gw.url, gw.tokens.default).messages.stream({
    model: "gpt-test",
    max_tokens: 32000,
    system: "Be brief.",
    messages: [{ role: "user", content: "Hi" }],
  });
  const texts: string[] = [];
  stream.on("text", (text) => texts.push(text));
  const message = await stream.finalMessage();
  assert.equal(texts.join(""), "Cached.");
  assert.deepEqual(message.content, [{ type: "text", text: "Cached." }]);
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(message.model, "gpt-test");
  assert.equal(message.usage.input_tokens, 20);
  assert.equal(message.usage.cache_read_input_tokens, 80);
  assert.equal(message.usage.output_tokens, 7);
  const seen = upstream.requests[0];
  assert.equal(seen.headers.get("authorization"), `Bearer ${UPSTREAM_KEYS.TEST_OPENAI_KEY}`);
  assert.deepEqual(seen.body?.messages, [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }]);
  assert.deepEqual(seen.body?.stream_options, { include_usage: true });
  assert.equal(seen.body?.max_tokens, 8192, "lowered to the upstream's max_output_tokens");
});

Deno.test("Claude Code's long user id reaches an OpenAI-style upstream that refuses a user over 64 characters", async () => {
  await using upstream = fakeUpstream();
  // As OpenAI's API checks it: a `user` longer than 64 characters is a 400.
  upstream.routes.set(CHAT_PATH, (seen) =>
    String(seen.body?.user ?? "").length > 64
      ? jsonReply({
        error: {
          message: "Invalid 'user': string too long.",
          type: "invalid_request_error",
          param: "user",
          code: "string_above_max_length",
        },
      }, 400)
      : jsonReply(chatCompletion("Hi")));
  await using gw = await startGateway(upstream.url);
  const userId = JSON.stringify({
    device_id: "ab".repeat(32),
    account_uuid: "0d4f0c2e-5b1a-4c3e-9a7d-2f6b8e1c4a90",
    session_id: "7c1e2b3a-4d5f-4e6a-8b9c-0a1b2c3d4e5f",
  });
  const message = await client(gw.url, gw.tokens.default).messages.create({
    model: "gpt-test",
    max_tokens: 64,
    metadata: { user_id: userId },
    messages: [{ role: "user", content: "Hi" }],
  });
  assert.deepEqual(message.content, [{ type: "text", text: "Hi" }]);
  assert.match(String(upstream.requests[0].body?.user), /^user_[0-9a-f]{40}$/);
});

Deno.test("Anthropic SDK completes a tool-use round trip through a chat upstream", async () => {
  await using upstream = fakeUpstream();
  let turn = 0;
  upstream.routes.set(
    CHAT_PATH,
    () =>
      turn++ === 0
        ? sseReply(fixture("openai-chat/parallel_tools.sse"))
        : jsonReply(JSON.parse(fixture("openai-chat/text.json"))),
  );
  await using gw = await startGateway(upstream.url);
  const anthropic = client(gw.url, gw.tokens.default);
  const schema = { type: "object" as const, properties: {} };
  const tools = [{ name: "get_time", input_schema: schema }, { name: "get_weather", input_schema: schema }];
  const question = { role: "user" as const, content: "Time and weather?" };
  const first = await anthropic.messages.stream({ model: "gpt-test", max_tokens: 64, tools, messages: [question] })
    .finalMessage();
  assert.equal(first.stop_reason, "tool_use");
  const calls = first.content.filter((block) => block.type === "tool_use");
  assert.deepEqual(calls.map((c) => [c.id, c.name, c.input]), [
    ["call_a", "get_time", { tz: "UTC" }],
    ["call_b", "get_weather", { city: "Paris" }],
  ]);
  const second = await anthropic.messages.create({
    model: "gpt-test",
    max_tokens: 64,
    tools,
    messages: [
      question,
      { role: "assistant", content: first.content },
      {
        role: "user",
        content: calls.map((c) => ({ type: "tool_result" as const, tool_use_id: c.id, content: `${c.name} done` })),
      },
    ],
  });
  assert.deepEqual(second.content, [{ type: "text", text: "Héllo, wörld 🌍" }]);
  const sent = upstream.requests[1].body?.messages as Record<string, unknown>[];
  assert.deepEqual(sent.map((m) => m.role), ["user", "assistant", "tool", "tool"]);
  assert.deepEqual(sent.slice(2).map((m) => m.tool_call_id), ["call_a", "call_b"]);
});

/** A short streamed request for the chat-upstream model, as the error tests send it. */
function sayHi(gw: TestGateway) {
  return client(gw.url, gw.tokens.default).messages.stream({
    model: "gpt-test",
    max_tokens: 8,
    messages: [{ role: "user", content: "Hi" }],
  });
}

const ERRORS = [
  { status: 429, code: "rate_limit_exceeded", sdkClass: Anthropic.RateLimitError, type: "rate_limit_error" },
  { status: 529, code: "overloaded", sdkClass: Anthropic.OverloadedError, type: "overloaded_error" },
  { status: 500, code: "server_error", sdkClass: Anthropic.InternalServerError, type: "api_error" },
];

for (const c of ERRORS) {
  Deno.test(`Anthropic SDK raises ${c.sdkClass.name} when the chat upstream answers ${c.status}`, async () => {
    await using upstream = fakeUpstream();
    const body = { error: { message: "Slow down", type: "server_error", param: null, code: c.code } };
    upstream.routes.set(CHAT_PATH, () => jsonReply(body, c.status, { "retry-after": "60" }));
    await using gw = await startGateway(upstream.url);
    const stream = sayHi(gw);
    const err = await stream.finalMessage().then(() => undefined, (e) => e);
    assert.ok(err instanceof c.sdkClass, `got ${err}`);
    assert.equal(err.status, c.status);
    assert.equal(err.type, c.type);
    assert.equal(err.headers.get("retry-after"), "60");
  });

  Deno.test(`Anthropic SDK raises an in-band ${c.type} when the chat stream fails with ${c.code}`, async () => {
    await using upstream = fakeUpstream();
    const reply = controlledStream();
    upstream.routes.set(CHAT_PATH, () => reply.response);
    await using gw = await startGateway(upstream.url);
    const stream = sayHi(gw);
    const chunk = { id: "c", choices: [{ index: 0, delta: { role: "assistant", content: "Part" } }] };
    reply.send(`data: ${JSON.stringify(chunk)}\n\n`);
    reply.send(`data: ${JSON.stringify({ error: { message: "Went away", type: "server_error", code: c.code } })}\n\n`);
    reply.end();
    const err = await stream.finalMessage().then(() => undefined, (e) => e);
    assert.ok(err instanceof Anthropic.APIError, `got ${err}`);
    assert.equal(err.status, undefined, "an in-band error has no status");
    assert.equal(err.type, c.type);
    assert.match(err.message, /Went away/);
  });
}

Deno.test("Anthropic SDK raises an error, not a clean end, when the chat upstream is cut mid-stream", async () => {
  await using upstream = fakeUpstream();
  const reply = controlledStream();
  upstream.routes.set(CHAT_PATH, () => reply.response);
  await using gw = await startGateway(upstream.url);
  const stream = sayHi(gw);
  // Cut only once the client holds the first event, so the break is mid-stream and not before the first byte.
  stream.once("streamEvent", () => reply.cut());
  reply.send(`data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: { content: "Part" } }] })}\n\n`);
  const err = await stream.finalMessage().then(() => undefined, (e) => e);
  assert.ok(err instanceof Anthropic.APIError, `got ${err}`);
  assert.equal(err.status, undefined, "an in-band error after the first byte");
  assert.equal(err.type, "api_error");
});

Deno.test("a client leaving a translated stream closes the upstream request", async () => {
  await using upstream = fakeUpstream();
  const reply = controlledStream();
  upstream.routes.set(CHAT_PATH, () => reply.response);
  await using gw = await startGateway(upstream.url);
  const pending = fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": gw.tokens.default },
    body: JSON.stringify({
      model: "gpt-test",
      max_tokens: 8,
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    }),
  });
  // The gateway answers once the upstream's first chunk is in hand.
  reply.send(`data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: { content: "Part" } }] })}\n\n`);
  await using body = bodyReader(await pending);
  assert.match(await body.next() ?? "", /^event: message_start/);
  await body.cancel();
  await within(upstream.requests[0].closed, 2000, "the upstream request closing");
  assert.equal(upstream.open(), 0);
});

Deno.test("Anthropic SDK countTokens on a chat-upstream model gets an estimate without calling the upstream", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const counted = await client(gw.url, gw.tokens.default).messages.countTokens({
    model: "gpt-test",
    messages: [{ role: "user", content: "x".repeat(400) }],
  });
  assert.ok(counted.input_tokens >= 100 && counted.input_tokens < 150, `estimate ${counted.input_tokens}`);
  assert.equal((counted as unknown as { estimated: boolean }).estimated, true, "flagged as an estimate");
  assert.equal(upstream.requests.length, 0);
});

const KEEP_ALIVE_CASES = [
  {
    client: "Messages",
    path: "/v1/messages",
    model: "gpt-test",
    upstreamPath: CHAT_PATH,
    first: `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: { content: "Part" } }] })}\n\n`,
    body: { max_tokens: 8 },
    keepAlive: 'event: ping\ndata: {"type":"ping"}\n\n',
  },
  {
    client: "Chat Completions",
    path: "/v1/chat/completions",
    model: "claude-test",
    upstreamPath: "POST /anth/v1/messages",
    first: firstEvent(fixture("anthropic/text.sse")),
    body: {},
    keepAlive: ": keep-alive\n\n",
  },
];

for (const c of KEEP_ALIVE_CASES) {
  Deno.test(`a translated ${c.client} stream gets keep-alives while the upstream is silent`, async () => {
    await using upstream = fakeUpstream();
    const reply = controlledStream();
    upstream.routes.set(c.upstreamPath, () => reply.response);
    await using gw = await startGateway(upstream.url, { extraYaml: "stream_keepalive_ms: 20\n" });
    const pending = fetch(`${gw.url}${c.path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${gw.tokens.default}` },
      body: JSON.stringify({ model: c.model, stream: true, messages: [{ role: "user", content: "Hi" }], ...c.body }),
    });
    reply.send(c.first);
    await using body = bodyReader(await pending);
    await body.next();
    // Nothing more comes from the upstream, so the next bytes can only be the gateway's keep-alive.
    assert.equal(await body.next(), c.keepAlive);
    await body.cancel();
    await within(upstream.requests[0].closed, 2000, "the upstream request closing");
  });
}

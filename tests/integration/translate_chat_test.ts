/**
 * @module The official OpenAI SDK's chat completions against a model whose upstream speaks Anthropic Messages:
 * a streamed answer with tool calls, a whole answer, and the SDK's error classes before and during the stream.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { deadlineFetch, fixture, startGateway, UPSTREAM_KEYS } from "../_helpers.ts";

const MESSAGES_PATH = "POST /anth/v1/messages";

function client(url: string, token: string): OpenAI {
  return new OpenAI({ apiKey: token, baseURL: `${url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
}

const TOOLS = [{
  type: "function" as const,
  function: { name: "get_time", parameters: { type: "object", properties: { tz: { type: "string" } } } },
}];

Deno.test("OpenAI SDK chat stream with tool calls reads an Anthropic upstream's stream", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/tool_use.sse")));
  await using gw = await startGateway(upstream.url);
  const stream = client(gw.url, gw.tokens.oa).chat.completions.stream({
    model: "claude-test",
    messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Time?" }],
    tools: TOOLS,
    stream_options: { include_usage: true },
  });
  const completion = await stream.finalChatCompletion();
  const choice = completion.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, "Let me check.");
  assert.deepEqual(
    choice.message.tool_calls?.map((c) => c.type === "function" && [c.id, c.function.name, c.function.arguments]),
    [
      ["toolu_1", "get_time", '{"tz":"UTC"}'],
    ],
  );
  assert.equal(completion.model, "claude-test");
  assert.equal(completion.usage?.prompt_tokens, 30);
  assert.equal(completion.usage?.completion_tokens, 12);
  const seen = upstream.requests[0];
  assert.equal(seen.headers.get("x-api-key"), UPSTREAM_KEYS.TEST_ANTHROPIC_KEY);
  assert.equal(seen.headers.get("anthropic-version"), "2023-06-01");
  assert.equal(seen.body?.max_tokens, 4096, "the upstream's default_max_tokens");
  assert.deepEqual(seen.body?.system, [{ type: "text", text: "Be brief." }]);
  assert.deepEqual(seen.body?.tools, [{ name: "get_time", input_schema: TOOLS[0].function.parameters }]);
});

Deno.test("OpenAI SDK chat.completions.create reads an Anthropic upstream's whole answer with cache usage", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => jsonReply(JSON.parse(fixture("anthropic/usage_cache.json"))));
  await using gw = await startGateway(upstream.url);
  const completion = await client(gw.url, gw.tokens.oa).chat.completions.create({
    model: "claude-test",
    max_completion_tokens: 32,
    messages: [{ role: "user", content: "Hi" }],
  });
  assert.equal(completion.choices[0].message.content, "Cached.");
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.equal(completion.usage?.prompt_tokens, 100);
  assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 80);
  assert.equal(upstream.requests[0].body?.max_tokens, 32);
});

// OpenAI clients know no 529: an overload reaches them as 503, with a hint that a retry may succeed.
const ERRORS = [
  { status: 429, type: "rate_limit_error", sdkClass: OpenAI.RateLimitError, clientStatus: 429 },
  { status: 529, type: "overloaded_error", sdkClass: OpenAI.InternalServerError, clientStatus: 503 },
  { status: 500, type: "api_error", sdkClass: OpenAI.InternalServerError, clientStatus: 500 },
];

for (const c of ERRORS) {
  Deno.test(`OpenAI SDK chat raises ${c.sdkClass.name} when the Anthropic upstream answers ${c.status}`, async () => {
    await using upstream = fakeUpstream();
    const body = { type: "error", error: { type: c.type, message: "Try later" } };
    upstream.routes.set(MESSAGES_PATH, () => jsonReply(body, c.status));
    await using gw = await startGateway(upstream.url);
    const err = await client(gw.url, gw.tokens.oa).chat.completions.create({
      model: "claude-test",
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    }).then(() => undefined, (e) => e);
    assert.ok(err instanceof c.sdkClass, `got ${err}`);
    assert.equal(err.status, c.clientStatus);
    if (c.status === 529) assert.equal(err.headers.get("x-should-retry"), "true");
    assert.match(err.message, /Try later/);
    assert.ok(err.error && typeof err.error === "object" && "type" in err.error, "an OpenAI error envelope");
  });

  Deno.test(`OpenAI SDK chat raises APIError when the Anthropic stream fails with ${c.type}`, async () => {
    await using upstream = fakeUpstream();
    const failing = fixture("anthropic/error_mid.sse").replace("overloaded_error", c.type);
    upstream.routes.set(MESSAGES_PATH, () => sseReply(failing));
    await using gw = await startGateway(upstream.url);
    const stream = await client(gw.url, gw.tokens.oa).chat.completions.create({
      model: "claude-test",
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    });
    const parts: string[] = [];
    const err = await (async () => {
      for await (const chunk of stream) parts.push(chunk.choices[0]?.delta.content ?? "");
    })().then(() => undefined, (e) => e);
    assert.ok(err instanceof OpenAI.APIError, `got ${err}`);
    assert.equal(err.status, undefined);
    assert.match(err.message, /Upstream overloaded/);
    assert.equal(parts.join(""), "Partial");
  });
}

Deno.test("OpenAI SDK chat raises an error, not a clean end, when the Anthropic upstream is cut mid-stream", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/cut.sse")));
  await using gw = await startGateway(upstream.url);
  const stream = client(gw.url, gw.tokens.oa).chat.completions.stream({
    model: "claude-test",
    messages: [{ role: "user", content: "Hi" }],
  });
  const err = await stream.finalChatCompletion().then(() => undefined, (e) => e);
  assert.ok(err instanceof OpenAI.APIError, `got ${err}`);
  assert.match(err.message, /ended before message_stop/);
});

Deno.test("OpenAI SDK chat raises the upstream's error, not an empty completion, when Anthropic answers 200 with one", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    MESSAGES_PATH,
    () => jsonReply({ type: "error", error: { type: "overloaded_error", message: "Overloaded inside a 200" } }),
  );
  await using gw = await startGateway(upstream.url);
  const err = await client(gw.url, gw.tokens.oa).chat.completions.create({
    model: "claude-test",
    messages: [{ role: "user", content: "Hi" }],
  }).then(() => undefined, (e) => e);
  assert.ok(err instanceof OpenAI.InternalServerError, `got ${err}`);
  assert.equal(err.status, 503);
  assert.match(err.message, /Overloaded inside a 200/);
  assert.deepEqual([err.type, err.code], ["server_error", "overloaded"]);
});

Deno.test("OpenAI SDK chat raises a 502 when the Anthropic upstream answers 200 with something that is not a message", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => jsonReply({ status: "ok" }));
  await using gw = await startGateway(upstream.url);
  const err = await client(gw.url, gw.tokens.oa).chat.completions.create({
    model: "claude-test",
    messages: [{ role: "user", content: "Hi" }],
  }).then(() => undefined, (e) => e);
  assert.ok(err instanceof OpenAI.InternalServerError, `got ${err}`);
  assert.equal(err.status, 502);
  assert.match(err.message, /not a reply/);
});

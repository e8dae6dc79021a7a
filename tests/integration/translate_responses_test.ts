/**
 * @module The official OpenAI SDK's Responses API against Anthropic and chat upstreams: streamed and whole answers,
 * Codex-style requests, an unknown previous_response_id, and the SDK's error classes before and during the stream.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { deadlineFetch, fixture, readSse, startGateway } from "../_helpers.ts";

const MESSAGES_PATH = "POST /anth/v1/messages";
const CHAT_PATH = "POST /oai/v1/chat/completions";

function client(url: string, token: string): OpenAI {
  return new OpenAI({ apiKey: token, baseURL: `${url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
}

const SHELL = { type: "function" as const, name: "get_time", parameters: { type: "object" }, strict: false };

Deno.test("OpenAI SDK responses.create streams an Anthropic upstream's tool call and thinking", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => sseReply(fixture("anthropic/reasoning.sse")));
  await using gw = await startGateway(upstream.url);
  const stream = await client(gw.url, gw.tokens.oa).responses.create({
    model: "claude-test",
    instructions: "Be brief.",
    input: "Meaning?",
    stream: true,
    store: false,
    reasoning: { effort: "low" },
    tools: [SHELL, { type: "web_search" }],
  });
  const types: string[] = [];
  let completed: OpenAI.Responses.Response | undefined;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.completed") completed = event.response;
  }
  assert.equal(types[0], "response.created");
  assert.equal(types.at(-1), "response.completed");
  assert.ok(completed?.id.startsWith("resp_"));
  const message = completed?.output.find((o) => o.type === "message");
  assert.ok(message?.type === "message");
  assert.deepEqual(message.content.map((p) => p.type === "output_text" && p.text), ["42"]);
  const reasoning = completed?.output.find((o) => o.type === "reasoning");
  assert.ok(
    reasoning?.type === "reasoning" && reasoning.encrypted_content,
    "the signature is sealed for the next turn",
  );
  assert.equal(completed?.usage?.input_tokens, 10);
  const sent = upstream.requests[0].body!;
  assert.deepEqual(sent.system, [{ type: "text", text: "Be brief." }]);
  assert.deepEqual(sent.thinking, { type: "enabled", budget_tokens: 2048 });
  assert.deepEqual((sent.tools as { name: string }[]).map((t) => t.name), ["get_time"]);
  assert.ok(gw.logs.some((l) => l.event === "translate_drop" && l.type === "web_search"), "the dropped tool is logged");
});

Deno.test("OpenAI SDK responses.create reads an Anthropic upstream's whole answer with a function call", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(MESSAGES_PATH, () => jsonReply(JSON.parse(fixture("anthropic/tool_use.json"))));
  await using gw = await startGateway(upstream.url);
  const response = await client(gw.url, gw.tokens.oa).responses.create({
    model: "claude-test",
    input: [{ role: "user", content: "Time?" }],
    tools: [SHELL],
  });
  assert.equal(response.status, "completed");
  assert.equal(response.output_text, "Let me check.");
  const call = response.output.find((o) => o.type === "function_call");
  assert.ok(call?.type === "function_call");
  assert.deepEqual([call.call_id, call.name, JSON.parse(call.arguments)], ["toolu_1", "get_time", { tz: "UTC" }]);
  assert.equal(response.usage?.total_tokens, 42);
});

Deno.test("Responses streaming through a chat upstream gives Codex the items and response.completed it needs", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(CHAT_PATH, () => sseReply(fixture("openai-chat/parallel_tools.sse")));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/responses", {
    model: "gpt-test",
    instructions: "You are Codex.",
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Go" }] }],
    tools: [SHELL, { type: "custom", name: "apply_patch", format: { type: "grammar" } }],
    tool_choice: "auto",
    parallel_tool_calls: true,
    stream: true,
    store: false,
    include: ["reasoning.encrypted_content"],
  }, { authorization: `Bearer ${gw.tokens.oa}`, "x-api-key": "" });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const events = (await readSse(res)).map((m) => JSON.parse(m.data));
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  const done = events.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
  assert.deepEqual(done.map((i) => [i.type, i.call_id, i.name, i.arguments]), [
    ["function_call", "call_a", "get_time", '{"tz":"UTC"}'],
    ["function_call", "call_b", "get_weather", '{"city":"Paris"}'],
  ]);
  const last = events.at(-1);
  assert.equal(last.type, "response.completed");
  assert.deepEqual(last.response.usage, {
    input_tokens: 40,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 60,
  });
  assert.deepEqual(upstream.requests[0].body?.messages, [
    { role: "system", content: "You are Codex." },
    { role: "user", content: "Go" },
  ]);
});

Deno.test("an unknown previous_response_id answers 400 in OpenAI's envelope naming the field", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const err = await client(gw.url, gw.tokens.oa).responses.create({
    model: "claude-test",
    input: "Hi",
    previous_response_id: "resp_123",
  }).then(() => undefined, (e) => e);
  assert.ok(err instanceof OpenAI.BadRequestError, `got ${err}`);
  assert.equal(err.param, "previous_response_id");
  assert.equal(err.code, "previous_response_not_found");
  assert.match(err.message, /Previous response with id 'resp_123' not found/);
  assert.equal(upstream.requests.length, 0);
});

// OpenAI clients know no 529: an overload reaches them as 503.
const ERRORS = [
  { status: 429, type: "rate_limit_error", sdkClass: OpenAI.RateLimitError, code: "rate_limit_exceeded", to: 429 },
  { status: 529, type: "overloaded_error", sdkClass: OpenAI.InternalServerError, code: "overloaded", to: 503 },
  { status: 500, type: "api_error", sdkClass: OpenAI.InternalServerError, code: "upstream_error", to: 500 },
];

for (const c of ERRORS) {
  Deno.test(`OpenAI SDK responses raises ${c.sdkClass.name} when the Anthropic upstream answers ${c.status}`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set(
      MESSAGES_PATH,
      () => jsonReply({ type: "error", error: { type: c.type, message: "No" } }, c.status),
    );
    await using gw = await startGateway(upstream.url);
    const err = await client(gw.url, gw.tokens.oa).responses.create({ model: "claude-test", input: "Hi", stream: true })
      .then(() => undefined, (e) => e);
    assert.ok(err instanceof c.sdkClass, `got ${err}`);
    assert.equal(err.status, c.to);
  });

  Deno.test(`Responses stream ends in response.failed and error when the Anthropic stream fails with ${c.type}`, async () => {
    await using upstream = fakeUpstream();
    const failing = fixture("anthropic/error_mid.sse").replace("overloaded_error", c.type);
    upstream.routes.set(MESSAGES_PATH, () => sseReply(failing));
    await using gw = await startGateway(upstream.url);
    const stream = await client(gw.url, gw.tokens.oa).responses.create({
      model: "claude-test",
      input: "Hi",
      stream: true,
    });
    const types: string[] = [];
    let failed: OpenAI.Responses.Response | undefined;
    const err = await (async () => {
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === "response.failed") failed = event.response;
      }
    })().then(() => undefined, (e) => e);
    assert.ok(err instanceof OpenAI.APIError, `got ${err}`);
    assert.equal(err.status, undefined);
    assert.match(err.message, /Upstream overloaded/);
    assert.equal(failed?.error?.code, c.code, "Codex maps response.failed by error.code");
    assert.ok(!types.includes("response.completed"));
  });
}

Deno.test("OpenAI SDK responses.stream() accumulates a chat upstream's reasoning and text into finalResponse()", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(CHAT_PATH, () => sseReply(fixture("openai-chat/reasoning.sse")));
  await using gw = await startGateway(upstream.url);
  const stream = client(gw.url, gw.tokens.oa).responses.stream({ model: "gpt-test", input: "Meaning?" });
  const deltas: string[] = [];
  stream.on("response.output_text.delta", (event) => deltas.push(event.delta));
  const response = await stream.finalResponse();
  assert.equal(response.output_text, "42");
  assert.deepEqual(deltas, ["42"]);
  const reasoning = response.output.find((o) => o.type === "reasoning");
  assert.ok(reasoning?.type === "reasoning");
  assert.deepEqual(reasoning.summary, [{ type: "summary_text", text: "Thinking about it." }]);
  assert.equal(response.usage?.output_tokens_details.reasoning_tokens, 6);
});

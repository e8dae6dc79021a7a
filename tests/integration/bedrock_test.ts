/**
 * @module Claude on Amazon Bedrock through the gateway, over real HTTP against the fake Bedrock: signed requests in
 * Bedrock's shape, answers and streams as the Anthropic API gives them, every mapped error, an exception frame
 * mid-stream, a cut stream, token counting, and no secret anywhere a client or a log could see it.
 */
import assert from "node:assert/strict";
import { fixtureEvents } from "../_cloud_answers.ts";
import { BEDROCK_MODEL, type Clouds, cloudSecrets, startClouds } from "../_clouds.ts";
import { fixture, readSse } from "../_helpers.ts";

const BODY = { model: "claude-bedrock", max_tokens: 64, messages: [{ role: "user", content: "Hello" }] };

/** Asserts no secret of the set-up is in any log line or in `texts`. */
function assertNoSecrets(clouds: Clouds, ...texts: string[]): void {
  const everything = [JSON.stringify(clouds.gw.logs), ...texts].join("\n");
  for (const secret of cloudSecrets(clouds)) assert.ok(!everything.includes(secret), "a secret leaked");
}

Deno.test("Bedrock: a message is signed, sent in Bedrock's shape, and answered as the Anthropic API answers", async () => {
  await using clouds = await startClouds();
  const res = await clouds.post("/v1/messages", BODY, {
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.deepEqual(JSON.parse(text), JSON.parse(fixture("anthropic/text.json")));
  const [seen] = clouds.bedrock.requests;
  assert.equal(seen.action, "invoke");
  assert.equal(seen.model, BEDROCK_MODEL);
  assert.equal(seen.auth, "sigv4");
  assert.deepEqual(seen.body, {
    max_tokens: 64,
    messages: [{ role: "user", content: "Hello" }],
    anthropic_version: "bedrock-2023-05-31",
    anthropic_beta: ["interleaved-thinking-2025-05-14"],
  });
  assert.equal(seen.headers.get("x-api-key"), null);
  assert.deepEqual(clouds.bedrock.refused, []);
  const [exchange] = clouds.gw.exchanges;
  assert.deepEqual([exchange.upstream, exchange.usage?.input_tokens, exchange.usage?.output_tokens], [
    "bedrock",
    12,
    5,
  ]);
  assertNoSecrets(clouds, text, JSON.stringify([...seen.headers]).replace(/FwoG\w+/, ""));
});

Deno.test("Bedrock: a stream's event frames reach the client as the Anthropic SSE stream, usage counted", async () => {
  await using clouds = await startClouds();
  const res = await clouds.post("/v1/messages", { ...BODY, stream: true });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
  const events = await readSse(res);
  const want = fixtureEvents("anthropic/text.sse");
  assert.deepEqual(events.map((e) => e.event), want.map((e) => e.type));
  assert.deepEqual(events.map((e) => JSON.parse(e.data)), want);
  assert.equal(clouds.bedrock.requests[0].action, "invoke-with-response-stream");
  assert.equal("stream" in clouds.bedrock.requests[0].body, false);
  const [exchange] = clouds.gw.exchanges;
  assert.deepEqual([exchange.usage?.input_tokens, exchange.usage?.output_tokens, exchange.usage_complete], [
    12,
    5,
    true,
  ]);
});

Deno.test("Bedrock: tool use arrives whole, streamed and not", async () => {
  await using clouds = await startClouds();
  clouds.bedrock.answer = (seen) =>
    seen.action === "invoke"
      ? { json: JSON.parse(fixture("anthropic/tool_use.json")) }
      : { events: fixtureEvents("anthropic/tool_use.sse") };
  const tools = [{ name: "get_weather", input_schema: { type: "object" } }];
  const whole = await (await clouds.post("/v1/messages", { ...BODY, tools })).json();
  assert.equal(whole.stop_reason, "tool_use");
  assert.equal(whole.content.at(-1).type, "tool_use");
  const events = await readSse(await clouds.post("/v1/messages", { ...BODY, tools, stream: true }));
  const json = events.flatMap((e) => {
    const data = JSON.parse(e.data);
    return data.delta?.type === "input_json_delta" ? [data.delta.partial_json] : [];
  }).join("");
  assert.deepEqual(JSON.parse(json), whole.content.at(-1).input);
  assert.deepEqual(clouds.bedrock.requests[1].body.tools, tools);
});

const ERRORS = [
  { error: "ThrottlingException", status: 429, client: 429, type: "rate_limit_error" },
  { error: "ServiceUnavailableException", status: 503, client: 529, type: "overloaded_error" },
  { error: "ValidationException", status: 400, client: 400, type: "invalid_request_error" },
  { error: "ModelTimeoutException", status: 408, client: 504, type: "timeout_error" },
  { error: "InternalServerException", status: 500, client: 500, type: "api_error" },
  { error: "ResourceNotFoundException", status: 404, client: 502, type: "api_error" },
  { error: "AccessDeniedException", status: 403, client: 502, type: "api_error" },
  { error: "UnrecognizedClientException", status: 403, client: 502, type: "api_error" },
];
for (const c of ERRORS) {
  Deno.test(`Bedrock: ${c.error} reaches an Anthropic client as ${c.client} ${c.type}`, async () => {
    await using clouds = await startClouds({ routing: "retry_budget: { ratio: 0, min_retries: 0 }" });
    clouds.bedrock.answer = () => ({ error: c.error, status: c.status, message: `Bedrock refused: ${c.error}` });
    const res = await clouds.post("/v1/messages", BODY);
    assert.equal(res.status, c.client);
    const body = await res.json();
    assert.equal(body.error.type, c.type);
    // Rebuilt in Anthropic's shape, the body carries the request's id as the API's own errors do.
    assert.equal(body.request_id, res.headers.get("request-id"));
    // Credential failures are the gateway's: the client learns that, not Bedrock's words about its account.
    if (c.status === 403) assert.match(body.error.message, /rejected the gateway's credentials/);
    else assert.equal(body.error.message, `Bedrock refused: ${c.error}`);
  });
}

Deno.test("Bedrock: an exception frame mid-stream becomes the in-band error; a first-frame one fails over first", async () => {
  await using clouds = await startClouds();
  clouds.bedrock.answer = () => ({
    events: fixtureEvents("anthropic/text.sse"),
    exception: { after: 4, type: "modelStreamErrorException", message: "The model stopped" },
  });
  const events = await readSse(await clouds.post("/v1/messages", { ...BODY, stream: true }));
  assert.deepEqual(events.map((e) => e.event), [
    "message_start",
    "content_block_start",
    "ping",
    "content_block_delta",
    "error",
  ]);
  assert.deepEqual(JSON.parse(events[4].data).error, { type: "api_error", message: "The model stopped" });
  assert.equal(clouds.gw.exchanges[0].usage_complete, false);

  // Throttled before any event: nothing reached the client, so it gets the status, not a 200 with an error inside.
  clouds.bedrock.answer = () => ({
    events: [],
    exception: { after: 0, type: "throttlingException", message: "Too many requests" },
  });
  const refused = await clouds.post("/v1/messages", { ...BODY, stream: true });
  assert.equal(refused.status, 429);
  assert.equal((await refused.json()).error.type, "rate_limit_error");
});

Deno.test("Bedrock: a stream cut inside a frame ends with an in-band error, never a normal ending", async () => {
  await using clouds = await startClouds();
  clouds.bedrock.answer = () => ({ events: fixtureEvents("anthropic/text.sse"), cutAfter: 3 });
  const events = await readSse(await clouds.post("/v1/messages", { ...BODY, stream: true }));
  assert.equal(events.at(-1)?.event, "error");
  assert.ok(!events.some((e) => e.event === "message_stop"));
  assert.ok(clouds.gw.exchanges[0].error);
});

Deno.test("Bedrock: count_tokens uses CountTokens; a model Bedrock cannot count for gets a flagged estimate", async () => {
  await using clouds = await startClouds();
  clouds.bedrock.answer = () => ({ json: {}, inputTokens: 321 });
  const { max_tokens: _, ...count } = BODY;
  const res = await clouds.post("/v1/messages/count_tokens", count);
  assert.deepEqual(await res.json(), { input_tokens: 321 });
  assert.equal(clouds.bedrock.requests[0].action, "count-tokens");
  assert.equal(clouds.bedrock.requests[0].model, "anthropic.claude-sonnet-4-5-20250929-v1:0");

  clouds.bedrock.answer = () => ({ error: "ValidationException", status: 400, message: "doesn't support counting" });
  const estimate = await (await clouds.post("/v1/messages/count_tokens", count)).json();
  assert.equal(estimate.estimated, true);
  assert.ok(estimate.input_tokens > 0);
});

Deno.test("Bedrock: a wrong secret is the gateway's failure (502), and no credential reaches the client or the log", async () => {
  await using clouds = await startClouds({ env: { AWS_SECRET_ACCESS_KEY: "a-wrong-secret-0123456789" } });
  const res = await clouds.post("/v1/messages", BODY);
  assert.equal(res.status, 502);
  const text = await res.text();
  assert.match(text, /rejected the gateway's credentials/);
  assert.ok(clouds.bedrock.refused.every((reason) => reason.startsWith("InvalidSignatureException")));
  assert.ok(!text.includes("a-wrong-secret") && !JSON.stringify(clouds.gw.logs).includes("a-wrong-secret"));
  assertNoSecrets(clouds, text);
});

Deno.test("Bedrock: with api_key_env the Bedrock API key goes as a bearer token, unsigned", async () => {
  await using clouds = await startClouds({
    bedrockKeys: "api_key_env: TEST_BEDROCK_API_KEY",
    env: { TEST_BEDROCK_API_KEY: "bedrock-api-key-0001" },
  });
  const res = await clouds.post("/v1/messages", BODY);
  assert.equal(res.status, 200);
  await res.body?.cancel();
  assert.equal(clouds.bedrock.requests[0].auth, "bearer");
  assert.equal(clouds.bedrock.requests[0].headers.get("x-amz-date"), null);
});

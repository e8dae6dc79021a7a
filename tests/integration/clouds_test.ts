/**
 * @module Cloud deployments as ordinary Anthropic-protocol upstreams: failover from a failing Anthropic deployment to
 * Bedrock and on to Vertex for one model, the official Anthropic and OpenAI SDKs (chat and Responses) on Bedrock- and
 * Vertex-served models through translation, health and missing credentials, and the clouds' retry times reaching the
 * client.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type ErrorAnswer, fixtureEvents } from "../_cloud_answers.ts";
import { startClouds } from "../_clouds.ts";
import { jsonReply } from "../_fake_upstream.ts";
import { deadlineFetch, fixture, readText } from "../_helpers.ts";

const BODY = { max_tokens: 64, messages: [{ role: "user" as const, content: "Hello" }] };
const overloaded = () => jsonReply({ type: "error", error: { type: "overloaded_error", message: "busy" } }, 529);

Deno.test("failover: a failing Anthropic deployment gives way to Bedrock, and a failing Bedrock to Vertex", async () => {
  await using clouds = await startClouds();
  clouds.anthropic.routes.set("POST /first/v1/messages", overloaded);
  const viaBedrock = await clouds.post("/v1/messages", { ...BODY, model: "claude-both", stream: true });
  assert.equal(viaBedrock.status, 200);
  assert.equal((await readText(viaBedrock)).includes("message_stop"), true);
  assert.deepEqual(clouds.gw.exchanges[0].attempts.map((a) => [a.upstream, a.outcome]), [
    ["first", "overloaded"],
    ["bedrock", "ok"],
  ]);

  clouds.bedrock.answer = () => ({ error: "ServiceUnavailableException", status: 503, message: "Bedrock is busy" });
  const viaVertex = await clouds.post("/v1/messages", { ...BODY, model: "claude-both" });
  assert.equal(viaVertex.status, 200);
  assert.equal((await viaVertex.json()).content[0].text, "Héllo, wörld 🌍");
  assert.deepEqual(clouds.gw.exchanges[1].attempts.map((a) => a.upstream), ["first", "bedrock", "vertex"]);
  assert.equal(clouds.vertex.requests[0].model, "claude-sonnet-4-5@20250929");
});

Deno.test("the Anthropic SDK streams, creates and counts on Bedrock- and Vertex-served models", async () => {
  await using clouds = await startClouds();
  clouds.bedrock.answer = (seen) =>
    seen.action === "count-tokens" ? { json: {}, inputTokens: 11 } : { events: fixtureEvents("anthropic/text.sse") };
  const client = new Anthropic({ apiKey: clouds.token, baseURL: clouds.gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const streamed = await client.messages.stream({ ...BODY, model: "claude-bedrock" })
    .finalMessage();
  assert.deepEqual(streamed.content, [{ type: "text", text: "Héllo, wörld 🌍" }]);
  assert.equal(
    (await client.messages.countTokens({ model: "claude-bedrock", messages: BODY.messages })).input_tokens,
    11,
  );
  const created = await client.messages.create(
    { ...BODY, model: "claude-vertex" } as Anthropic.MessageCreateParamsNonStreaming,
  );
  assert.equal(created.stop_reason, "end_turn");
  const counted = await client.messages.countTokens({ model: "claude-vertex", messages: BODY.messages });
  assert.equal(counted.input_tokens, 42);
});

const TOOLS = [{ type: "function" as const, function: { name: "get_time", parameters: { type: "object" } } }];

Deno.test("the OpenAI SDK's chat completions reach a Bedrock model through translation, tool calls included", async () => {
  await using clouds = await startClouds();
  clouds.bedrock.answer = (seen) =>
    seen.action === "invoke"
      ? { json: JSON.parse(fixture("anthropic/tool_use.json")) }
      : { events: fixtureEvents("anthropic/tool_use.sse") };
  const client = new OpenAI({
    apiKey: clouds.token,
    baseURL: `${clouds.gw.url}/v1`,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
  const request = { model: "claude-bedrock", messages: [{ role: "user" as const, content: "Time?" }], tools: TOOLS };
  const streamed = await client.chat.completions.stream({ ...request, stream_options: { include_usage: true } })
    .finalChatCompletion();
  assert.equal(streamed.choices[0].finish_reason, "tool_calls");
  const call = streamed.choices[0].message.tool_calls?.[0];
  assert.equal(call?.type === "function" && call.function.name, "get_time");
  const whole = await client.chat.completions.create(request);
  assert.equal(whole.choices[0].finish_reason, "tool_calls");
  // What Bedrock got is Messages in Bedrock's shape: the translation ran first, then the transport.
  const sent = clouds.bedrock.requests[0].body;
  assert.equal(sent.anthropic_version, "bedrock-2023-05-31");
  assert.deepEqual((sent.tools as { name: string }[]).map((t) => t.name), ["get_time"]);
  assert.equal(typeof sent.max_tokens, "number");
});

Deno.test("the OpenAI SDK's Responses API reaches a Vertex model, streamed and not", async () => {
  await using clouds = await startClouds();
  const client = new OpenAI({
    apiKey: clouds.token,
    baseURL: `${clouds.gw.url}/v1`,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
  const response = await client.responses.create({ model: "claude-vertex", input: "Hello" });
  assert.equal(response.output_text, "Héllo, wörld 🌍");
  const stream = client.responses.stream({ model: "claude-vertex", input: "Hello" });
  assert.equal((await stream.finalResponse()).output_text, "Héllo, wörld 🌍");
  assert.deepEqual(clouds.vertex.requests.map((r) => r.action), ["rawPredict", "streamRawPredict"]);
});

Deno.test("a cloud upstream without credentials answers 503 and shows has_key false; one with them is ready", async () => {
  await using clouds = await startClouds({ env: { AWS_ACCESS_KEY_ID: "" } });
  const res = await clouds.post("/v1/messages", { ...BODY, model: "claude-bedrock" });
  assert.equal(res.status, 503);
  assert.match((await res.json()).error.message, /key is not configured/);
  const health = await (await fetch(`${clouds.gw.url}/healthz`)).json();
  assert.equal(health.upstreams.bedrock.has_key, false);
  assert.equal(health.upstreams.vertex.has_key, true);
  assert.equal(clouds.bedrock.requests.length, 0);
});

/** A cloud's 429 in each of its error shapes, with the retry time it gives, and the header the client must get. */
const CLOUD_RETRY_TIMES: { name: string; model: string; answer: ErrorAnswer; want: [string, string] }[] = [
  {
    name: "Bedrock's ThrottlingException",
    model: "claude-bedrock",
    answer: {
      error: "ThrottlingException",
      status: 429,
      message: "Too many requests",
      headers: { "retry-after": "30" },
    },
    want: ["retry-after", "30"],
  },
  {
    name: "Vertex's model error in Anthropic's shape",
    model: "claude-vertex",
    answer: { error: "rate_limit_error", status: 429, message: "Slow down", headers: { "retry-after": "30" } },
    want: ["retry-after", "30"],
  },
  {
    name: "Vertex's model error with retry-after-ms",
    model: "claude-vertex",
    answer: { error: "rate_limit_error", status: 429, message: "Slow down", headers: { "retry-after-ms": "30000" } },
    want: ["retry-after-ms", "30000"],
  },
  {
    name: "Google's RESOURCE_EXHAUSTED",
    model: "claude-vertex",
    answer: {
      error: "",
      google: "RESOURCE_EXHAUSTED",
      status: 429,
      message: "Quota exceeded for the base model",
      headers: { "retry-after": "30" },
    },
    want: ["retry-after", "30"],
  },
];

for (const c of CLOUD_RETRY_TIMES) {
  Deno.test(`the retry time of ${c.name} reaches Anthropic and OpenAI clients`, async () => {
    await using clouds = await startClouds();
    clouds.bedrock.answer = () => c.answer;
    clouds.vertex.answer = () => c.answer;
    const [header, value] = c.want;
    // 30 s is past the routing deadline, so the gateway passes the pause on rather than waiting it out.
    const anthropic = await clouds.post("/v1/messages", { ...BODY, model: c.model });
    assert.equal(anthropic.status, 429);
    assert.equal((await anthropic.json()).error.type, "rate_limit_error");
    assert.equal(anthropic.headers.get(header), value);
    const chat = { model: c.model, messages: BODY.messages };
    const openai = await clouds.post("/v1/chat/completions", chat, {
      "x-api-key": "",
      authorization: `Bearer ${clouds.token}`,
    });
    assert.equal(openai.status, 429);
    assert.equal((await openai.json()).error.type, "rate_limit_error");
    assert.equal(openai.headers.get(header), value);
    assert.equal(clouds.bedrock.requests.length + clouds.vertex.requests.length, 2, "one attempt per request");
  });
}

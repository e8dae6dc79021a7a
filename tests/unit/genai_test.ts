/**
 * @module The GenAI attributes read from an exchange: provider names by protocol, request settings, the prompt total
 * the conventions count, integers as BigInts, how a stream ended, bounded metric attributes, and what an answer says
 * of itself as the usage meter reads it.
 */
import assert from "node:assert/strict";
import type { Exchange } from "../../src/core/exchange.ts";
import { type UpstreamConfig, UpstreamSchema } from "../../src/core/upstream_config.ts";
import {
  finalAttributes,
  firstChunkSeconds,
  metricAttributes,
  operationOf,
  requestAttributes,
  streamEnd,
  upstreamAttributes,
} from "../../src/observe/genai.ts";
import { SseParser } from "../../src/core/sse.ts";
import { usageMeter } from "../../src/usage/meter.ts";
import { tracingEnabled } from "../../src/observe/tracing_switch.ts";

function upstream(config: Record<string, unknown>): UpstreamConfig {
  return UpstreamSchema.parse({ name: "up", models: ["m"], ...config });
}

const PROVIDERS = [
  { protocol: "anthropic", want: "anthropic", extra: { base_url: "https://api.anthropic.com/v1", api_key_env: "K" } },
  { protocol: "openai", want: "openai", extra: { base_url: "http://127.0.0.1:8000/v1", api_key_env: "K" } },
  {
    protocol: "azure-openai",
    want: "azure.ai.openai",
    extra: { base_url: "https://r.openai.azure.com/openai/v1", api_key_env: "K" },
  },
  { protocol: "anthropic-bedrock", want: "aws.bedrock", extra: { region: "us-east-1" } },
  { protocol: "anthropic-vertex", want: "gcp.vertex_ai", extra: { project: "p", region: "us-east5" } },
  {
    protocol: "gemini",
    want: "gcp.gemini",
    extra: { base_url: "https://generativelanguage.googleapis.com/v1beta", api_key_env: "K" },
  },
  { protocol: "gemini-vertex", want: "gcp.vertex_ai", extra: { project: "p", region: "us-central1" } },
];
for (const c of PROVIDERS) {
  Deno.test(`upstreamAttributes() names the ${c.protocol} upstream's provider as ${c.want}`, () => {
    const attributes = upstreamAttributes(upstream({ protocol: c.protocol, ...c.extra }), true);
    assert.equal(attributes["gen_ai.provider.name"], c.want);
    assert.equal(typeof attributes["server.port"], "bigint");
    assert.equal(attributes["modelgate.translated"], false);
  });
}

Deno.test("upstreamAttributes() gives the base URL's host and port, never its path", () => {
  const attributes = upstreamAttributes(
    upstream({ protocol: "openai", base_url: "http://h:9/x/v1", api_key_env: "K" }),
    false,
  );
  assert.deepEqual(
    { address: attributes["server.address"], port: attributes["server.port"] },
    { address: "h", port: 9n },
  );
  assert.ok(!Object.values(attributes).some((value) => String(value).includes("/x/v1")));
});

const SETTINGS = [
  { name: "Messages", body: { max_tokens: 64, temperature: 0.2 }, want: { max: 64n, temperature: 0.2 } },
  { name: "Chat (reasoning)", body: { max_completion_tokens: 32 }, want: { max: 32n, temperature: undefined } },
  { name: "Responses", body: { max_output_tokens: 8, temperature: 1 }, want: { max: 8n, temperature: 1 } },
  {
    name: "Gemini",
    body: { generationConfig: { maxOutputTokens: 16, temperature: 0.7 } },
    want: { max: 16n, temperature: 0.7 },
  },
  { name: "text in a number's place", body: { max_tokens: "64", temperature: "hot" }, want: {} },
];
for (const c of SETTINGS) {
  Deno.test(`requestAttributes() reads the ${c.name} body's limit as an integer and its temperature`, () => {
    const attributes = requestAttributes(c.body);
    assert.deepEqual(
      { max: attributes["gen_ai.request.max_tokens"], temperature: attributes["gen_ai.request.temperature"] },
      { max: c.want.max, temperature: c.want.temperature },
    );
  });
}

function exchange(extra: Partial<Exchange> = {}): Exchange {
  return {
    request_id: "r",
    started_at: 1000,
    method: "POST",
    route: "/v1/messages",
    protocol: "anthropic",
    stream: false,
    attempts: [{ upstream: "up", outcome: "ok", status: 200 }],
    status: 200,
    model: "m",
    ...extra,
  };
}

Deno.test("finalAttributes() counts cache reads and writes within the input tokens, as BigInts", () => {
  const attributes = finalAttributes(
    exchange({
      usage: { input_tokens: 5, output_tokens: 2, cache_read_input_tokens: 4, cache_creation_input_tokens: 3 },
      price: { input: 3, output: 15 },
    }),
    "EUR",
  );
  assert.equal(attributes["gen_ai.usage.input_tokens"], 12n);
  assert.equal(attributes["gen_ai.usage.output_tokens"], 2n);
  assert.equal(attributes["gen_ai.usage.cache_read.input_tokens"], 4n);
  assert.equal(attributes["gen_ai.usage.cache_creation.input_tokens"], 3n);
  assert.equal(attributes["modelgate.cost"], "0.000045");
  assert.equal(attributes["modelgate.currency"], "EUR");
  assert.equal(attributes["error.type"], undefined);
});

const ENDS = [
  { name: "in full", extra: { usage_complete: true }, want: "complete" },
  { name: "cut by the upstream", extra: { usage_complete: false, error: "upstream" }, want: "cut" },
  { name: "cut by a time limit", extra: { usage_complete: false, error: "timeout" }, want: "cut" },
  { name: "left by its client", extra: { usage_complete: false }, want: "client_left" },
] as const;
for (const c of ENDS) {
  Deno.test(`streamEnd() calls a stream ${c.name} ${c.want}`, () => {
    assert.equal(streamEnd(exchange({ stream: true, ...c.extra })), c.want);
  });
}

Deno.test("firstChunkSeconds() counts from the model call's start, and only for a stream", () => {
  assert.equal(firstChunkSeconds(exchange({ stream: true, ttfb_ms: 250 }), 1050), 0.2);
  assert.equal(firstChunkSeconds(exchange({ ttfb_ms: 250 }), 1050), undefined);
});

Deno.test("metricAttributes() carries only bounded values: no request, token or session id", () => {
  const attributes = metricAttributes(
    exchange({ token_id: "tok_1", session_id: "s", error: "timeout" }),
    upstreamAttributes(upstream({ protocol: "anthropic", base_url: "http://h:1/v1", api_key_env: "K" }), true),
  );
  assert.deepEqual(Object.keys(attributes).sort(), [
    "error.type",
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "modelgate.upstream",
    "server.address",
    "server.port",
  ]);
});

Deno.test("an embeddings exchange is the conventions' embeddings operation, with its counts and no text", () => {
  const usage = { input_tokens: 42, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
  const embedding = exchange({ embeddings: { inputs: 3, dimensions: 256 }, usage });
  assert.equal(operationOf(embedding), "embeddings");
  assert.equal(operationOf(exchange({})), "chat");
  assert.equal(metricAttributes(embedding, undefined)["gen_ai.operation.name"], "embeddings");
  const final = finalAttributes(embedding, "USD");
  assert.equal(final["gen_ai.embeddings.dimension.count"], 256n);
  assert.equal(final["modelgate.embeddings.inputs"], 3n);
  assert.equal(final["gen_ai.usage.input_tokens"], 42n);
});

Deno.test("finalAttributes() names the guardrails' hits by rule, kind, action and scope, never the match", () => {
  const final = finalAttributes(
    exchange({
      guardrails: [
        { rule: "no-secrets", kind: "aws_access_key", action: "mask", scope: "input", count: 2 },
        { rule: "no-secrets", kind: "aws_access_key", action: "mask", scope: "output", count: 1 },
      ],
    }),
    "USD",
  );
  assert.deepEqual(final["modelgate.guardrails"], [
    "no-secrets:aws_access_key:mask:input=2",
    "no-secrets:aws_access_key:mask:output=1",
  ]);
  assert.equal(finalAttributes(exchange({}), "USD")["modelgate.guardrails"], undefined);
});

const ANSWERS = [
  {
    name: "an Anthropic stream",
    protocol: "anthropic" as const,
    sse: 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"claude-x",' +
      '"usage":{"input_tokens":1,"output_tokens":1}}}\n\nevent: message_delta\ndata: {"type":"message_delta",' +
      '"delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":2}}\n\n',
    want: { id: "msg_1", model: "claude-x", finish_reasons: ["tool_use"] },
  },
  {
    name: "a chat stream without usage",
    protocol: "openai-chat" as const,
    sse: 'data: {"id":"c-1","model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n' +
      'data: {"id":"c-1","model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n',
    want: { id: "c-1", model: "gpt-x", finish_reasons: ["length"] },
  },
  {
    name: "a Gemini stream, usage only on its last chunk",
    protocol: "gemini" as const,
    sse: 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}],"modelVersion":"gemini-x",' +
      '"responseId":"r-1"}\r\n\r\ndata: {"candidates":[{"content":{"role":"model","parts":[{"text":"!"}]},' +
      '"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2},' +
      '"modelVersion":"gemini-x","responseId":"r-1"}\r\n\r\n',
    want: { id: "r-1", model: "gemini-x", finish_reasons: ["MAX_TOKENS"] },
  },
  {
    name: "a Gemini stream without usage",
    protocol: "gemini" as const,
    sse: 'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]}}],"modelVersion":"gemini-x","responseId":"r-2"}' +
      '\n\ndata: {"candidates":[{"content":{"parts":[]},"finishReason":"STOP"}],"modelVersion":"gemini-x"}\n\n',
    want: { id: "r-2", model: "gemini-x", finish_reasons: ["STOP"] },
  },
  {
    name: "a chat stream whose id looks like a secret",
    protocol: "openai-chat" as const,
    sse: 'data: {"id":"sk-secret","model":"gpt-x","choices":[]}\n\n',
    want: { id: undefined, model: "gpt-x" },
  },
];
for (const c of ANSWERS) {
  Deno.test(`usageMeter().answer() reads the id, model and finish reasons of ${c.name}`, () => {
    const meter = usageMeter(c.protocol);
    for (const message of new SseParser().push(c.sse)) meter.event(message);
    assert.deepEqual(meter.answer(), c.want);
  });
}

Deno.test("usageMeter().answer() reads a whole chat completion's finish reasons", () => {
  const meter = usageMeter("openai-chat");
  meter.body({ id: "c-2", model: "gpt-y", choices: [{ finish_reason: "stop" }, { finish_reason: "length" }] });
  assert.deepEqual(meter.answer(), { id: "c-2", model: "gpt-y", finish_reasons: ["stop", "length"] });
});

Deno.test("usageMeter().answer() reads a whole Gemini answer's id, model version and finish reasons", () => {
  const meter = usageMeter("gemini");
  meter.body({
    candidates: [{ finishReason: "STOP" }, { finishReason: "SAFETY" }],
    usageMetadata: { promptTokenCount: 1 },
    modelVersion: "gemini-y",
    responseId: "r-3",
  });
  assert.deepEqual(meter.answer(), { id: "r-3", model: "gemini-y", finish_reasons: ["STOP", "SAFETY"] });
});

const SWITCH = [
  { value: "true", want: true },
  { value: "TRUE", want: true },
  { value: "1", want: false },
  { value: "false", want: false },
  { value: undefined, want: false },
];
for (const c of SWITCH) {
  Deno.test(`tracingEnabled() is ${c.want} for OTEL_DENO=${c.value}, as the runtime's export is`, () => {
    assert.equal(tracingEnabled((name) => name === "OTEL_DENO" ? c.value : undefined), c.want);
  });
}

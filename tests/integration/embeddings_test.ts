/**
 * @module POST /v1/embeddings onto an OpenAI upstream over real HTTP, with the official OpenAI SDK: floats and base64
 * decoded to the same vectors, dimensions, token ids, the model's kind, each bad input refused before any upstream
 * call, and failover from a failing deployment (operating them: embeddings_operating_test.ts).
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { embeddingsGateway, mountOpenAi } from "../_embeddings_gateway.ts";
import { tokensFor, vectorFor } from "../_fake_embeddings.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { deadlineFetch } from "../_helpers.ts";

function sdk(url: string, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, fetch: deadlineFetch() });
}

Deno.test("the OpenAI SDK's embeddings: base64 by default and floats decode to the same vectors", async () => {
  await using upstream = fakeUpstream();
  const calls = mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url });
  const client = sdk(gw.url, gw.tokens.default);
  const inputs = ["the first text", "a second one", "and a third"];
  const base64 = await client.embeddings.create({ model: "embed-small", input: inputs });
  const floats = await client.embeddings.create({ model: "embed-small", input: inputs, encoding_format: "float" });
  for (const answer of [base64, floats]) {
    assert.deepEqual(answer.data.map((d) => d.embedding), inputs.map((text) => vectorFor(text)));
    assert.deepEqual(answer.data.map((d) => d.index), [0, 1, 2]);
    assert.equal(answer.model, "embed-small");
    const tokens = inputs.reduce((sum, text) => sum + tokensFor(text), 0);
    assert.deepEqual(answer.usage, { prompt_tokens: tokens, total_tokens: tokens });
  }
  assert.deepEqual(upstream.requests.map((r) => r.body?.encoding_format), ["base64", "float"]);
  assert.deepEqual(upstream.requests.map((r) => r.body?.model), ["text-embedding-3-small", "text-embedding-3-small"]);
  assert.deepEqual(calls, [3, 3]);
  assert.ok(upstream.requests.every((r) => !r.raw.includes(gw.tokens.default)), "the client's token stayed here");
});

Deno.test("dimensions and token ids pass to an OpenAI upstream, which refuses dimensions for ada-002", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url });
  const client = sdk(gw.url, gw.tokens.default);
  const sized = await client.embeddings.create({ model: "embed-small", input: "short", dimensions: 3 });
  assert.deepEqual(sized.data[0].embedding, vectorFor("short", 3));
  const tokens = await client.embeddings.create({ model: "embed-small", input: [[1, 2, 3], [40, 50]] });
  assert.deepEqual(tokens.data.map((d) => d.embedding), [vectorFor([1, 2, 3]), vectorFor([40, 50])]);
  await assert.rejects(
    client.embeddings.create({ model: "ada", input: "x", dimensions: 3 }),
    (err: InstanceType<typeof OpenAI.APIError>) =>
      err.status === 400 && /does not support specifying dimensions/.test(err.message),
  );
});

Deno.test("a model's kind: a chat request to an embedding model and embeddings of a chat model are 400s", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url });
  const headers = { "x-api-key": "", authorization: `Bearer ${gw.tokens.default}` };
  const chat = await gw.post("/v1/chat/completions", {
    model: "embed-small",
    messages: [{ role: "user", content: "Hi" }],
  }, headers);
  assert.equal(chat.status, 400);
  const chatError = (await chat.json()).error;
  assert.deepEqual([chatError.param, chatError.code], ["model", "model_kind_mismatch"]);
  assert.match(chatError.message, /"embed-small" is an embedding model; it is served by the embeddings endpoints/);
  const messages = await gw.post("/v1/messages", {
    model: "embed-small",
    max_tokens: 5,
    messages: [{ role: "user", content: "Hi" }],
  });
  assert.equal(messages.status, 400);
  assert.match((await messages.json()).error.message, /is an embedding model/);
  const embed = await gw.post("/v1/embeddings", { model: "gpt-test", input: "x" }, headers);
  assert.equal(embed.status, 400);
  assert.match((await embed.json()).error.message, /"gpt-test" is a chat model; it is served by the generation/);
  assert.equal(upstream.requests.length, 0);
});

const BAD_INPUTS: { name: string; body: Record<string, unknown>; param: string; message: RegExp }[] = [
  { name: "no input", body: { model: "embed-small" }, param: "input", message: /input: is required/ },
  { name: "an empty string", body: { model: "embed-small", input: "" }, param: "input", message: /empty string/ },
  { name: "an empty array", body: { model: "embed-small", input: [] }, param: "input", message: /empty array/ },
  {
    name: "an empty string among the inputs",
    body: { model: "embed-small", input: ["a", ""] },
    param: "input[1]",
    message: /input\[1\]: must not be an empty string/,
  },
  {
    name: "more inputs than 2048",
    body: { model: "embed-small", input: Array.from({ length: 2049 }, () => "x") },
    param: "input",
    message: /at most 2048 inputs \(it holds 2049\)/,
  },
  {
    name: "a non-number in a token array",
    body: { model: "embed-small", input: [[1, "two", 3]] },
    param: "input[0][1]",
    message: /must be a token id/,
  },
  {
    name: "a fraction as a token",
    body: { model: "embed-small", input: [1.5] },
    param: "input[0]",
    message: /token id/,
  },
  {
    name: "an unknown encoding",
    body: { model: "embed-small", input: "x", encoding_format: "hex" },
    param: "encoding_format",
    message: /"float" or "base64"/,
  },
  {
    name: "zero dimensions",
    body: { model: "embed-small", input: "x", dimensions: 0 },
    param: "dimensions",
    message: /positive integer/,
  },
  { name: "no model", body: { input: "x" }, param: "model", message: /model: is required/ },
];

for (const c of BAD_INPUTS) {
  Deno.test(`bad embeddings input is a 400 naming the field before any upstream call: ${c.name}`, async () => {
    await using upstream = fakeUpstream();
    mountOpenAi(upstream);
    await using gw = await embeddingsGateway({ url: upstream.url });
    const res = await gw.post("/v1/embeddings", c.body);
    assert.equal(res.status, 400);
    const { error } = await res.json();
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, c.param);
    assert.match(error.message, c.message);
    assert.equal(upstream.requests.length, 0);
  });
}

Deno.test("an embeddings body over max_body_bytes is a 413 before any upstream call", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url }, { maxBodyBytes: 2048 });
  const res = await gw.post("/v1/embeddings", { model: "embed-small", input: ["x".repeat(4096)] });
  assert.equal(res.status, 413);
  assert.equal((await res.json()).error.type, "invalid_request_error");
  assert.equal(upstream.requests.length, 0);
});

Deno.test("embeddings fail over from a failing deployment to the next one", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /down/v1/embeddings",
    () => jsonReply({ error: { message: "The server had an error", type: "server_error" } }, 500),
  );
  mountOpenAi(upstream);
  const extra = `  - name: down
    protocol: openai
    base_url: ${upstream.url}/down/v1
    api_key_env: TEST_OPENAI_KEY
    priority: 1
    models:
      - { id: embed-small, upstream_id: text-embedding-3-small, kind: embedding }
`;
  await using gw = await embeddingsGateway({ url: upstream.url, extra });
  const answer = await sdk(gw.url, gw.tokens.default).embeddings.create({ model: "embed-small", input: "hello" });
  assert.deepEqual(answer.data[0].embedding, vectorFor("hello"));
  assert.deepEqual(upstream.requests.map((r) => r.path), ["/down/v1/embeddings", "/oai/v1/embeddings"]);
  const exchange = gw.exchanges.at(-1)!;
  assert.deepEqual(exchange.attempts.map((a) => [a.upstream, a.outcome]), [["down", "upstream"], ["oai", "ok"]]);
});

/**
 * @module Operating embeddings over real HTTP with the official OpenAI SDK: usage and spend per token and model with
 * the request log's counts, tokens_per_minute and a cost budget, the console's usage, what of an upstream's answer may
 * reach the client (floats encoded to base64, vectors that are not base64 or quote a key), and the Responses socket's
 * refusal of an embedding model.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { requestLog, usageTotals } from "../../src/usage/query.ts";
import { open, signIn } from "../_console.ts";
import { embeddingsGateway, mountOpenAi } from "../_embeddings_gateway.ts";
import { tokensFor, vectorFor } from "../_fake_embeddings.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { deadlineFetch } from "../_helpers.ts";
import { create, openSocket } from "../_socket.ts";
import { frozenClock } from "../_spend.ts";

function sdk(url: string, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, fetch: deadlineFetch() });
}

Deno.test("embeddings' usage and spend are recorded per token and model, with the request log's counts", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url }, { now: frozenClock() });
  const { secret } = await gw.store.createToken({ group: "default" });
  const input = Array.from({ length: 10 }, (_, i) => `document number ${i} `.repeat(40));
  const tokens = input.reduce((sum, text) => sum + tokensFor(text), 0);
  const answer = await sdk(gw.url, secret).embeddings.create({ model: "embed-small", input, dimensions: 4 });
  assert.equal(answer.usage.prompt_tokens, tokens);
  await gw.flush();
  const [entry] = await requestLog(gw.store.kv, { limit: 10 });
  assert.equal(entry.model, "embed-small");
  assert.equal(entry.input_tokens, tokens);
  assert.equal(entry.output_tokens, 0);
  // 0.02 per million input tokens.
  assert.equal(entry.cost, (tokens * 0.02 / 1_000_000).toFixed(12).replace(/0+$/, ""));
  assert.deepEqual(entry.embeddings, { inputs: 10, dimensions: 4 });
  assert.ok(!JSON.stringify(entry).includes("document number"), "the log holds no text");
  const day = gw.deps.now().toISOString().slice(0, 10);
  const [row] = await usageTotals(gw.store.kv, { by: "model", since: day, until: day, name: "embed-small" });
  assert.deepEqual([row.requests, row.input_tokens], [1, tokens]);
});

Deno.test("a token over its tokens_per_minute is refused embeddings with a 429 before any upstream call", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url }, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  await gw.store.updateToken(record.id, { limits: { tokens_per_minute: 300 } });
  const client = sdk(gw.url, secret);
  // About 250 tokens: admitted, then counted at the upstream's count.
  await client.embeddings.create({ model: "embed-small", input: ["x".repeat(1000)] });
  await gw.deps.operator.limiter.settled();
  await assert.rejects(
    client.embeddings.create({ model: "embed-small", input: ["y".repeat(1000)] }),
    (err: InstanceType<typeof OpenAI.APIError>) => err.status === 429 && /tokens_per_minute = 300/.test(err.message),
  );
  assert.equal(upstream.requests.length, 1);
});

Deno.test("the console's usage and request log show embeddings beside generations", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url }, { admin: true, now: frozenClock() });
  await sdk(gw.url, gw.tokens.default).embeddings.create({ model: "embed-small", input: ["x".repeat(4000)] });
  await gw.flush();
  const cookie = await signIn(gw);
  const chart = (await open(gw, "/ui/usage?by=model&metric=input_tokens", cookie)).text;
  assert.ok(chart.includes("embed-small"), "the usage page names the embedding model");
  const day = gw.deps.now().toISOString().slice(0, 10);
  const csv = await (await fetch(`${gw.url}/ui/usage.csv?by=model&since=${day}&until=${day}`, { headers: { cookie } }))
    .text();
  assert.ok(csv.includes(`"embed-small","1","0","0","1000","0"`), csv);
  const log = (await open(gw, "/ui/requests", cookie)).text;
  assert.ok(log.includes("embed-small"));
});

Deno.test("a compatible service that answers floats to base64 is encoded by the gateway, so the SDK decodes it right", async () => {
  await using upstream = fakeUpstream();
  // Like some OpenAI-compatible servers, it ignores encoding_format and always answers floats.
  upstream.routes.set("POST /oai/v1/embeddings", ({ body }) =>
    jsonReply({
      object: "list",
      data: (body!.input as string[]).map((text, index) => ({
        object: "embedding",
        index,
        embedding: vectorFor(text),
      })),
      model: "compat",
      usage: { prompt_tokens: 2, total_tokens: 2 },
    }));
  await using gw = await embeddingsGateway({ url: upstream.url });
  const raw = await (await gw.post("/v1/embeddings", { model: "embed-small", input: ["a"], encoding_format: "base64" }))
    .json();
  assert.equal(typeof raw.data[0].embedding, "string");
  const answer = await sdk(gw.url, gw.tokens.default).embeddings.create({ model: "embed-small", input: ["a", "b"] });
  assert.deepEqual(answer.data.map((d) => d.embedding), [vectorFor("a"), vectorFor("b")]);
});

Deno.test("an answer whose vector is not base64, or quotes the upstream's key, reaches the client as a 502 only", async () => {
  const key = "UpstreamOpenAiKeyInBase64Alphabet0123456789ab";
  for (const embedding of ["not base64!", key + "A".repeat(16 - (key.length % 16))]) {
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /oai/v1/embeddings", () =>
      jsonReply({
        object: "list",
        data: [{ object: "embedding", index: 0, embedding }],
        usage: { prompt_tokens: 1, total_tokens: 1 },
      }));
    await using gw = await embeddingsGateway({ url: upstream.url }, { env: { TEST_OPENAI_KEY: key } });
    const res = await gw.post("/v1/embeddings", { model: "embed-small", input: "x", encoding_format: "base64" });
    assert.equal(res.status, 502);
    const text = await res.text();
    assert.ok(!text.includes(key), text);
    assert.match(text, /answered with a body that is not embeddings/);
  }
});

Deno.test("a token's cost_per_day budget counts embeddings at their input price, then refuses them", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url }, { now: frozenClock() });
  const { secret, record } = await gw.store.createToken({ group: "default" });
  // 0.02 per million input tokens: 1,000 tokens cost 0.00002, so a third does not fit after two.
  await gw.store.updateToken(record.id, { limits: { cost_per_day: 0.00005 } });
  const client = sdk(gw.url, secret);
  for (let i = 0; i < 2; i++) {
    await client.embeddings.create({ model: "embed-small", input: ["z".repeat(4000)] });
    await gw.deps.operator.limiter.settled();
  }
  await assert.rejects(
    client.embeddings.create({ model: "embed-small", input: ["z".repeat(4000)] }),
    (err: InstanceType<typeof OpenAI.APIError>) =>
      err.status === 429 && /cost_per_day = 0\.00005 USD/.test(err.message),
  );
  assert.equal(upstream.requests.length, 2);
});

Deno.test("a Responses socket's turn and warm-up on an embedding model are refused naming its kind", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  for (const generate of [false, true]) {
    socket.send(create({ generate, model: "embed-small", input: "hi" }));
    const refused = await socket.next();
    const error = refused.error as { code: string; param: string };
    assert.deepEqual([refused.status, error.param, error.code], [400, "model", "model_kind_mismatch"]);
  }
  assert.equal(upstream.requests.length, 0);
});

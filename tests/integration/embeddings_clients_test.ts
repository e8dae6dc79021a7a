/**
 * @module Embeddings from the clients real pipelines use: the Google Gen AI SDK's `models.embedContent` (several
 * contents, outputDimensionality, under /v1 and /v1beta) onto an OpenAI-shaped and a Bedrock upstream, the Gemini
 * shape's bad input and kind refusals in Google's error shape, and the Vercel AI SDK's `embedMany`.
 */
import { GoogleGenAI } from "@google/genai";
import { createOpenAI } from "@ai-sdk/openai";
import { embedMany } from "ai";
import assert from "node:assert/strict";
import { EMBED_KEYS, embeddingsGateway, mountOpenAi } from "../_embeddings_gateway.ts";
import { fakeBedrock } from "../_fake_bedrock.ts";
import { geminiBatchEmbed, vectorFor } from "../_fake_embeddings.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { deadlineFetch, within } from "../_helpers.ts";
import { REQUEST_DEADLINE_MS } from "../_reads.ts";

function genai(url: string, token: string, apiVersion?: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey: token, httpOptions: { baseUrl: url, apiVersion, timeout: REQUEST_DEADLINE_MS } });
}

const CASES = [
  { model: "embed-small", upstream: "openai", apiVersion: undefined, length: 8 },
  { model: "embed-small", upstream: "openai", apiVersion: "v1beta", length: 8 },
  { model: "cohere-v4", upstream: "bedrock", apiVersion: undefined, length: 8 },
  { model: "titan", upstream: "bedrock", apiVersion: "v1beta", length: 1024 },
];

for (const c of CASES) {
  Deno.test(`the Gen AI SDK's embedContent with several contents onto ${c.model} (${c.apiVersion ?? "v1"})`, async () => {
    await using upstream = fakeUpstream();
    mountOpenAi(upstream);
    await using bedrock = fakeBedrock();
    await using gw = await embeddingsGateway({ url: upstream.url, bedrockUrl: bedrock.url });
    const ai = genai(gw.url, gw.tokens.default, c.apiVersion);
    const contents = ["What is your name?", "What is your favourite colour?", "Where do you live?"];
    const answer = await within(ai.models.embedContent({ model: c.model, contents }), REQUEST_DEADLINE_MS, "embed");
    assert.deepEqual(answer.embeddings?.map((e) => e.values), contents.map((text) => vectorFor(text, c.length)));
    const sized = await within(
      ai.models.embedContent({
        model: c.model,
        contents: "one text",
        config: { outputDimensionality: 256, taskType: "RETRIEVAL_QUERY" },
      }),
      REQUEST_DEADLINE_MS,
      "embed with dimensions",
    );
    assert.deepEqual(sized.embeddings?.[0].values, vectorFor("one text", 256));
    if (c.upstream === "openai") {
      // Floats are asked of an OpenAI upstream for a Gemini client, which takes nothing else.
      assert.deepEqual(upstream.requests.map((r) => [r.body?.encoding_format, r.body?.dimensions]), [
        ["float", undefined],
        ["float", 256],
      ]);
    } else if (c.model === "cohere-v4") {
      // The task type reaches Cohere as its input_type; documents are its default.
      assert.deepEqual(bedrock.requests.map((r) => r.body.input_type), ["search_document", "search_query"]);
    }
  });
}

Deno.test("the Gemini shape's :embedContent answers one embedding, and refuses bad input in Google's shape", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using gw = await embeddingsGateway({ url: upstream.url });
  const headers = { "x-api-key": "", "x-goog-api-key": gw.tokens.default };
  const one = await gw.post(
    "/v1beta/models/embed-small:embedContent",
    { content: { parts: [{ text: "hi" }] } },
    headers,
  );
  assert.equal(one.status, 200);
  assert.deepEqual(await one.json(), { embedding: { values: vectorFor("hi") } });
  const bad = [
    { path: "embed-small:embedContent", body: {}, field: "content" },
    { path: "embed-small:embedContent", body: { content: { parts: [{ text: "" }] } }, field: "content.parts" },
    { path: "embed-small:batchEmbedContents", body: { requests: [] }, field: "requests" },
    {
      path: "embed-small:batchEmbedContents",
      body: { requests: [{ content: { parts: [{ text: "a" }] } }, { content: { parts: [{ inlineData: {} }] } }] },
      field: "requests[1].content.parts[0].text",
    },
    { path: "gpt-test:embedContent", body: { content: { parts: [{ text: "a" }] } }, field: "model" },
  ];
  for (const c of bad) {
    const res = await gw.post(`/v1beta/models/${c.path}`, c.body, headers);
    assert.equal(res.status, 400, c.field);
    const { error } = await res.json();
    assert.equal(error.status, "INVALID_ARGUMENT");
    assert.ok(error.message.startsWith(`${c.field}:`), `${c.field}: ${error.message}`);
  }
  assert.equal(upstream.requests.length, 1);
  const listed = await (await deadlineFetch()(`${gw.url}/v1beta/models/embed-small`, { headers })).json();
  assert.deepEqual(listed.supportedGenerationMethods, ["embedContent", "batchEmbedContents"]);
});

Deno.test("the Vercel AI SDK's embedMany through the gateway, split by the upstream and answered in order", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  await using bedrock = fakeBedrock();
  await using gw = await embeddingsGateway({ url: upstream.url, bedrockUrl: bedrock.url });
  const openai = createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.tokens.default, fetch: deadlineFetch() });
  const values = Array.from({ length: 150 }, (_, i) => `value ${i}`);
  const { embeddings, usage } = await embedMany({ model: openai.embedding("cohere"), values, maxRetries: 0 });
  assert.deepEqual(embeddings, values.map((value) => vectorFor(value)));
  assert.ok(usage.tokens > 0);
  assert.deepEqual(bedrock.requests.map((r) => (r.body.texts as string[]).length).toSorted(), [54, 96]);
});

Deno.test("a Gemini client's embeddings fail over from a deployment at its rate limit, and get a refusal in Google's shape", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  upstream.routes.set(
    "POST /busy/v1beta/models/gemini-embedding-001:batchEmbedContents",
    () =>
      Response.json({ error: { code: 429, message: "Resource exhausted", status: "RESOURCE_EXHAUSTED" } }, {
        status: 429,
      }),
  );
  upstream.routes.set(
    "POST /gemini/v1beta/models/gemini-embedding-001:batchEmbedContents",
    geminiBatchEmbed(EMBED_KEYS.TEST_GEMINI_KEY),
  );
  const extra = `  - name: busy
    protocol: gemini
    base_url: ${upstream.url}/busy/v1beta
    api_key_env: TEST_GEMINI_KEY
    priority: 1
    models:
      - { id: gemini-embed, upstream_id: gemini-embedding-001, kind: embedding }
`;
  await using gw = await embeddingsGateway({ url: upstream.url, extra });
  const ai = genai(gw.url, gw.tokens.default, "v1beta");
  const answer = await within(
    ai.models.embedContent({ model: "gemini-embed", contents: ["a", "b"] }),
    REQUEST_DEADLINE_MS,
    "embed",
  );
  assert.deepEqual(answer.embeddings?.map((e) => e.values), [vectorFor("a"), vectorFor("b")]);
  assert.deepEqual(gw.exchanges.at(-1)!.attempts.map((a) => [a.upstream, a.status]), [["busy", 429], ["gem", 200]]);
  // An upstream's own refusal of the request reaches a Gemini client of a Gemini upstream as Google wrote it.
  upstream.routes.set(
    "POST /gemini/v1beta/models/gemini-embedding-001:batchEmbedContents",
    () =>
      Response.json({ error: { code: 400, message: "Text too long", status: "INVALID_ARGUMENT" } }, { status: 400 }),
  );
  const headers = { "x-api-key": "", "x-goog-api-key": gw.tokens.default };
  const res = await gw.post(
    "/v1beta/models/gemini-embed:embedContent",
    { content: { parts: [{ text: "x" }] } },
    headers,
  );
  assert.equal(res.status, 400);
  assert.deepEqual((await res.json()).error, { code: 400, message: "Text too long", status: "INVALID_ARGUMENT" });
});

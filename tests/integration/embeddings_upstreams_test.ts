/**
 * @module The official OpenAI SDK's embeddings onto each upstream kind over real HTTP: Azure OpenAI (its key, or an
 * Entra ID token), the Gemini API (split by 100, outputDimensionality), Titan (one a call, its dimensions) and Cohere v3
 * and v4 on Bedrock (split by 96, signed), each answered in the client's order, base64 encoded by the gateway where the
 * upstream gives floats, and what an upstream cannot take refused before any call.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { EMBED_KEYS, embeddingsGateway } from "../_embeddings_gateway.ts";
import { ENTRA, mountEntra } from "../_fake_azure.ts";
import { fakeBedrock } from "../_fake_bedrock.ts";
import { geminiBatchEmbed, openAiEmbeddings, tokensFor, vectorFor, vertexPredictEmbed } from "../_fake_embeddings.ts";
import { fakeVertex } from "../_fake_vertex.ts";
import { type FakeUpstream, fakeUpstream } from "../_fake_upstream.ts";
import { deadlineFetch } from "../_helpers.ts";

function sdk(url: string, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, fetch: deadlineFetch() });
}

type APIError = InstanceType<typeof OpenAI.APIError>;

/** Texts that differ from each other, so an answer out of order shows. */
function texts(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `text number ${i} ${"word ".repeat(i % 7)}`);
}

/** Mounts Azure's and Gemini's embeddings on the fake; the lists get each call's input count. */
function mountClouds(upstream: FakeUpstream): { azure: number[]; gemini: number[] } {
  const azure: number[] = [];
  const gemini: number[] = [];
  const azureKey = (headers: Headers) =>
    headers.get("api-key") === EMBED_KEYS.TEST_AZURE_KEY && !headers.has("authorization");
  upstream.routes.set("POST /azure/openai/v1/embeddings", openAiEmbeddings(EMBED_KEYS.TEST_AZURE_KEY, azure, azureKey));
  upstream.routes.set(
    "POST /gemini/v1beta/models/gemini-embedding-001:batchEmbedContents",
    geminiBatchEmbed(EMBED_KEYS.TEST_GEMINI_KEY, gemini),
  );
  return { azure, gemini };
}

const KINDS = [
  { model: "azure-embed", count: 30, calls: [30, 30, 2] },
  { model: "gemini-embed", count: 250, calls: [100, 100, 50, 100, 100, 50, 2] },
  { model: "titan", count: 5, calls: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] },
  { model: "cohere", count: 200, calls: [96, 96, 8, 96, 96, 8, 2] },
  { model: "cohere-v4", count: 100, calls: [96, 4, 96, 4, 2] },
];

for (const c of KINDS) {
  Deno.test(`the OpenAI SDK's embeddings onto ${c.model}: split as it takes them, in order, base64 and floats alike`, async () => {
    await using upstream = fakeUpstream();
    const seen = mountClouds(upstream);
    await using bedrock = fakeBedrock();
    await using gw = await embeddingsGateway({ url: upstream.url, bedrockUrl: bedrock.url });
    const client = sdk(gw.url, gw.tokens.default);
    const input = texts(c.count);
    const base64 = await client.embeddings.create({ model: c.model, input });
    const floats = await client.embeddings.create({ model: c.model, input, encoding_format: "float" });
    const length = c.model === "titan" ? 1024 : 8;
    for (const answer of [base64, floats]) {
      assert.equal(answer.data.length, c.count);
      assert.deepEqual(answer.data.map((d) => d.index), input.map((_, i) => i));
      assert.deepEqual(answer.data.map((d) => d.embedding), input.map((text) => vectorFor(text, length)));
      assert.equal(answer.model, c.model);
      assert.equal(answer.usage.prompt_tokens, input.reduce((sum, text) => sum + tokensFor(text), 0));
    }
    // On the wire, base64 is a string of float32 bytes (an SDK that met floats there would decode junk).
    const raw =
      await (await gw.post("/v1/embeddings", { model: c.model, input: input.slice(0, 2), encoding_format: "base64" }))
        .json();
    assert.deepEqual(raw.data.map((d: { embedding: unknown }) => typeof d.embedding), ["string", "string"]);
    const bytes = Uint8Array.fromBase64(raw.data[1].embedding);
    assert.deepEqual([...new Float32Array(bytes.buffer)], vectorFor(input[1], length));
    const bedrockCalls = bedrock.requests.map((r) => Array.isArray(r.body.texts) ? r.body.texts.length : 1);
    const calls = c.model === "azure-embed" ? seen.azure : c.model === "gemini-embed" ? seen.gemini : bedrockCalls;
    // The calls run side by side, so they arrive in any order; the answer's order is the request's (above).
    assert.deepEqual(calls.toSorted(), c.calls.toSorted());
    if (bedrock.requests.length > 0) assert.ok(bedrock.requests.every((r) => r.auth === "sigv4"));
  });
}

const DIMENSIONS = [
  { model: "gemini-embed", dimensions: 5, field: "outputDimensionality", sent: 5 },
  { model: "titan", dimensions: 256, field: "dimensions", sent: 256 },
  { model: "cohere-v4", dimensions: 512, field: "output_dimension", sent: 512 },
  { model: "azure-embed", dimensions: 3, field: "dimensions", sent: 3 },
];

for (const c of DIMENSIONS) {
  Deno.test(`dimensions reach ${c.model} as its ${c.field}`, async () => {
    await using upstream = fakeUpstream();
    mountClouds(upstream);
    await using bedrock = fakeBedrock();
    await using gw = await embeddingsGateway({ url: upstream.url, bedrockUrl: bedrock.url });
    const answer = await sdk(gw.url, gw.tokens.default).embeddings.create({
      model: c.model,
      input: ["one", "two"],
      dimensions: c.dimensions,
    });
    assert.deepEqual(answer.data.map((d) => d.embedding), [vectorFor("one", c.sent), vectorFor("two", c.sent)]);
  });
}

const REFUSED = [
  { name: "dimensions Titan cannot give", body: { model: "titan", input: "x", dimensions: 64 }, param: "dimensions" },
  { name: "dimensions on Cohere v3", body: { model: "cohere", input: "x", dimensions: 256 }, param: "dimensions" },
  { name: "Cohere v4's dimensions", body: { model: "cohere-v4", input: "x", dimensions: 300 }, param: "dimensions" },
  { name: "token ids to Gemini", body: { model: "gemini-embed", input: [[1, 2]] }, param: "input" },
  { name: "token ids to Titan", body: { model: "titan", input: ["a", [1, 2]] }, param: "input[1]" },
];

for (const c of REFUSED) {
  Deno.test(`what an upstream cannot take is a 400 naming the field before any call: ${c.name}`, async () => {
    await using upstream = fakeUpstream();
    mountClouds(upstream);
    await using bedrock = fakeBedrock();
    await using gw = await embeddingsGateway({ url: upstream.url, bedrockUrl: bedrock.url });
    const res = await gw.post("/v1/embeddings", c.body);
    assert.equal(res.status, 400);
    const { error } = await res.json();
    assert.equal(error.param, c.param);
    assert.equal(upstream.requests.length + bedrock.requests.length, 0);
  });
}

Deno.test("embeddings onto Azure OpenAI with a Microsoft Entra ID token as the bearer", async () => {
  await using upstream = fakeUpstream();
  const entra = mountEntra(upstream, Date.now);
  const calls: number[] = [];
  const issued = (headers: Headers) => {
    const token = headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
    return entra.issued.has(token) && !headers.has("api-key");
  };
  upstream.routes.set("POST /entra/openai/v1/embeddings", openAiEmbeddings("", calls, issued));
  const extra = `  - name: az-entra
    protocol: azure-openai
    base_url: ${upstream.url}/entra/openai/v1
    entra: { tenant_id: ${ENTRA.tenant}, client_id: ${ENTRA.clientId}, client_secret_env: TEST_ENTRA_SECRET, authority: ${upstream.url} }
    models:
      - { id: entra-embed, upstream_id: my-embedding-deployment, kind: embedding }
`;
  await using gw = await embeddingsGateway({ url: upstream.url, extra, extraModels: ["entra-embed"] }, {
    env: { TEST_ENTRA_SECRET: ENTRA.clientSecret },
  });
  const answer = await sdk(gw.url, gw.tokens.default).embeddings.create({ model: "entra-embed", input: ["a", "b"] });
  assert.deepEqual(answer.data.map((d) => d.embedding), [vectorFor("a"), vectorFor("b")]);
  assert.deepEqual(calls, [2]);
  assert.equal(entra.grants.length, 1);
});

Deno.test("a failed call of a split request fails it in the client's shape, and the calls after it are not made", async () => {
  await using upstream = fakeUpstream();
  const gemini = geminiBatchEmbed(EMBED_KEYS.TEST_GEMINI_KEY);
  let made = 0;
  upstream.routes.set("POST /gemini/v1beta/models/gemini-embedding-001:batchEmbedContents", (seen, req) => {
    made++;
    if (made === 2) {
      return Response.json({
        error: { code: 400, message: "Request payload size exceeds the limit", status: "INVALID_ARGUMENT" },
      }, {
        status: 400,
      });
    }
    return gemini(seen, req);
  });
  await using gw = await embeddingsGateway({ url: upstream.url });
  // 1,000 inputs are ten calls; four run at once, so the failure of the second stops the rest.
  await assert.rejects(
    sdk(gw.url, gw.tokens.default).embeddings.create({ model: "gemini-embed", input: texts(1000) }),
    (err: APIError) =>
      err.status === 400 && /payload size exceeds/.test(err.message) && !err.message.includes(upstream.url),
  );
  assert.ok(made <= 5, `${made} calls were made`);
  assert.equal(gw.exchanges.at(-1)!.attempts.length, 1, "a 400 is the request's, not failed over");
});

Deno.test("embeddings onto Google's models on Vertex AI through predict, with the service account's token", async () => {
  await using upstream = fakeUpstream();
  await using vertex = await fakeVertex();
  const calls: number[] = [];
  vertex.gemini = vertexPredictEmbed(calls);
  const extra = `  - name: gv
    protocol: gemini-vertex
    project: ${vertex.project}
    region: ${vertex.region}
    base_url: "${vertex.url}"
    models:
      - { id: vertex-gemini, upstream_id: gemini-embedding-001, kind: embedding }
      - { id: vertex-text, upstream_id: text-embedding-005, kind: embedding }
`;
  await using gw = await embeddingsGateway(
    { url: upstream.url, extra, extraModels: ["vertex-gemini", "vertex-text"] },
    {
      env: { GOOGLE_APPLICATION_CREDENTIALS: vertex.credentialsFile },
    },
  );
  const client = sdk(gw.url, gw.tokens.default);
  const input = texts(3);
  const one = await client.embeddings.create({ model: "vertex-gemini", input, dimensions: 4 });
  assert.deepEqual(one.data.map((d) => d.embedding), input.map((text) => vectorFor(text, 4)));
  assert.equal(one.usage.prompt_tokens, input.reduce((sum, text) => sum + tokensFor(text), 0));
  const many = await client.embeddings.create({ model: "vertex-text", input: texts(300) });
  assert.deepEqual(many.data.map((d) => d.embedding), texts(300).map((text) => vectorFor(text)));
  assert.deepEqual(calls.toSorted((a, b) => a - b), [1, 1, 1, 50, 250]);
  assert.equal(vertex.grants.length, 1);
});

/**
 * @module The pure parts of embeddings: base64 vectors as float32 little-endian, each upstream kind's shape and batch,
 * the calls a request is cut into and their bodies, the answers merged in order with estimated tokens where none are
 * counted, and the config's refusals of `kind: embedding` where it cannot be served.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";
import { decodeVector, encodeVector } from "../../src/protocols/embeddings.ts";
import { bedrockEmbeddingShape } from "../../src/protocols/bedrock_embeddings.ts";
import { readOpenAiEmbedRequest } from "../../src/protocols/openai_embeddings.ts";
import { mergeParts, openAiEmbedAnswer } from "../../src/translate/embeddings_answer.ts";
import { embedCalls, embeddingShapeOf } from "../../src/translate/embeddings_request.ts";

Deno.test("encodeVector() writes float32 little-endian in standard base64, and decodeVector() reads it back", () => {
  // 1.0 is 0x3f800000: little-endian bytes 00 00 80 3f.
  assert.equal(encodeVector([1]), "AACAPw==");
  assert.deepEqual(decodeVector(encodeVector([0.5, -2, 1024.25])), [0.5, -2, 1024.25]);
  assert.equal(decodeVector("AACA"), undefined, "not whole float32 values");
  assert.equal(decodeVector("not base64!"), undefined);
});

const SHAPES = [
  { kind: "openai", model: "text-embedding-3-small", want: "openai", batch: 2048 },
  { kind: "azure-openai", model: "my-deployment", want: "openai", batch: 2048 },
  { kind: "gemini", model: "gemini-embedding-001", want: "gemini", batch: 100 },
  { kind: "anthropic-bedrock", model: "amazon.titan-embed-text-v2:0", want: "titan", batch: 1 },
  { kind: "anthropic-bedrock", model: "cohere.embed-multilingual-v3", want: "cohere", batch: 96 },
  { kind: "anthropic-bedrock", model: "eu.cohere.embed-v4:0", want: "cohere-v4", batch: 96 },
  { kind: "anthropic-bedrock", model: "anthropic.claude-sonnet-4-5", want: undefined, batch: 0 },
  { kind: "gemini-vertex", model: "gemini-embedding-001", want: "vertex", batch: 1 },
  { kind: "gemini-vertex", model: "text-embedding-005", want: "vertex", batch: 250 },
  { kind: "anthropic", model: "claude-x", want: undefined, batch: 0 },
] as const;

for (const c of SHAPES) {
  Deno.test(`embeddingShapeOf() names ${c.want ?? "no"} shape for ${c.model} on ${c.kind}`, () => {
    const shape = embeddingShapeOf(c.kind, c.model);
    assert.equal(shape?.name, c.want);
    if (shape) assert.equal(shape.batch, c.batch);
  });
}

Deno.test("embedCalls() cuts a request by the shape's batch, each call's body in the upstream's own fields", () => {
  const request = readOpenAiEmbedRequest({ model: "e", input: ["a", "b", "c"], dimensions: 512 });
  const cohere = embedCalls(request, bedrockEmbeddingShape("cohere.embed-v4:0")!, {
    upstreamModel: "cohere.embed-v4:0",
    dimensionsField: "dimensions",
  });
  assert.deepEqual(cohere.map((c) => c.body), [{
    texts: ["a", "b", "c"],
    input_type: "search_document",
    embedding_types: ["float"],
    output_dimension: 512,
  }]);
  const titan = embedCalls(request, bedrockEmbeddingShape("amazon.titan-embed-text-v2:0")!, {
    upstreamModel: "amazon.titan-embed-text-v2:0",
    dimensionsField: "dimensions",
  });
  assert.deepEqual(titan.map((c) => [c.start, c.body]), [
    [0, { inputText: "a", dimensions: 512 }],
    [1, { inputText: "b", dimensions: 512 }],
    [2, { inputText: "c", dimensions: 512 }],
  ]);
  const gemini = embedCalls({ ...request, task: "RETRIEVAL_QUERY" }, embeddingShapeOf("gemini", "g")!, {
    upstreamModel: "g",
    dimensionsField: "dimensions",
  });
  assert.deepEqual(gemini[0].body, {
    requests: ["a", "b", "c"].map((text) => ({
      model: "models/g",
      content: { parts: [{ text }] },
      taskType: "RETRIEVAL_QUERY",
      outputDimensionality: 512,
    })),
  });
});

Deno.test("mergeParts() keeps the request's order and estimates the tokens of a call that counted none", () => {
  const request = readOpenAiEmbedRequest({ model: "e", input: ["aaaa", "bbbbbbbb", "c"], encoding_format: "base64" });
  const calls = embedCalls(request, embeddingShapeOf("gemini", "g")!, { upstreamModel: "g", dimensionsField: "d" });
  const split = [{ ...calls[0], inputs: ["aaaa", "bbbbbbbb"] }, { ...calls[0], start: 2, inputs: ["c"] }];
  const result = mergeParts(split, [{ vectors: [[1], [2]], tokens: 10 }, { vectors: [[3]] }]);
  assert.deepEqual(result, { vectors: [[1], [2], [3]], tokens: 11, estimated: true });
  const answer = openAiEmbedAnswer(request, result);
  assert.deepEqual((answer.data as { embedding: string }[]).map((d) => decodeVector(d.embedding)), [[1], [2], [3]]);
  assert.deepEqual(answer.usage, { prompt_tokens: 11, total_tokens: 11 });
});

function configWith(upstream: string, extra = ""): () => unknown {
  return () =>
    parseConfig(`upstreams:\n  - ${upstream}\n${extra}groups: [{ name: g, listing: auto, models: [e] }]\n`, "u.yaml");
}

const REFUSED = [
  {
    name: "kind: embedding on Anthropic",
    upstream:
      "{ name: a, protocol: anthropic, base_url: 'https://x', api_key_env: K, models: [{ id: e, kind: embedding }] }",
    message: /upstreams\[0\]\.models\[0\]\.kind: cannot be embedding: anthropic has no embeddings API/,
  },
  {
    name: "a Bedrock id that is not an embedding model the gateway speaks",
    upstream:
      "{ name: b, protocol: anthropic-bedrock, region: us-east-1, models: [{ id: e, upstream_id: amazon.nova-pro, kind: embedding }] }",
    message: /models\[0\]\.kind: cannot be embedding for this id/,
  },
  {
    name: "one model id of two kinds",
    upstream:
      "{ name: o, protocol: openai, base_url: 'https://x', api_key_env: K, models: [{ id: e, kind: embedding }] }",
    extra: "  - { name: p, protocol: openai, base_url: 'https://y', api_key_env: K, models: [e] }\n",
    message: /upstreams\[1\]\.models\[0\]: is chat here but embedding on an earlier upstream/,
  },
];

for (const c of REFUSED) {
  Deno.test(`parseConfig() refuses ${c.name}`, () => {
    assert.throws(configWith(c.upstream, c.extra), (err: Error) => c.message.test(err.message));
  });
}

Deno.test("parseConfig() takes kind: embedding on Titan and Cohere ids of a Bedrock upstream", () => {
  const config = configWith(
    "{ name: b, protocol: anthropic-bedrock, region: us-east-1, models: [{ id: e, upstream_id: 'us.cohere.embed-v4:0', kind: embedding }] }",
  )() as { upstreams: { models: { kind: string }[] }[] };
  assert.equal(config.upstreams[0].models[0].kind, "embedding");
});

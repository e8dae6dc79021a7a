/**
 * @module The embeddings passthrough over real HTTP: an OpenAI-shaped upstream's answer reaches an OpenAI client as the
 * bytes it sent (the public model id spliced in) when nothing in it needs changing, is read and written again when
 * something does (the encoding, the order, a missing usage, a spacing the splice cannot find), and never carries an
 * upstream secret, written plainly or with JSON escapes.
 */
import assert from "node:assert/strict";
import { encodeVector } from "../../src/protocols/embeddings.ts";
import { embeddingsGateway } from "../_embeddings_gateway.ts";
import { vectorFor } from "../_fake_embeddings.ts";
import { fakeUpstream } from "../_fake_upstream.ts";

/** A key made of base64's characters, so it could hide in a vector. */
const KEY = "UpstreamOpenAiKeyInBase64Alphabet0123456789ab";
const INPUTS = ["first text", "second text"];
const USAGE = { prompt_tokens: 9, total_tokens: 9 };

/** An OpenAI-shaped answer to {@linkcode INPUTS}, its vectors as base64 or floats, with the upstream's model id. */
function answer(base64: boolean, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const data = INPUTS.map((text, index) => ({
    object: "embedding",
    index,
    embedding: base64 ? encodeVector(vectorFor(text)) : vectorFor(text),
  }));
  return { object: "list", data, model: "text-embedding-3-small", usage: USAGE, ...extra };
}

/** What the client gets for `encoding` when the upstream answers `text`. */
async function through(text: string, encoding: "float" | "base64"): Promise<{ status: number; text: string }> {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /oai/v1/embeddings",
    () => new Response(text, { headers: { "content-type": "application/json" } }),
  );
  await using gw = await embeddingsGateway({ url: upstream.url }, { env: { TEST_OPENAI_KEY: KEY } });
  const res = await gw.post("/v1/embeddings", { model: "embed-small", input: INPUTS, encoding_format: encoding });
  return { status: res.status, text: await res.text() };
}

/** The answer the gateway writes itself: the public model id, the vectors in order, nothing of the upstream's else. */
function written(encoding: "float" | "base64", tokens = USAGE.prompt_tokens): Record<string, unknown> {
  const data = INPUTS.map((text, index) => ({
    object: "embedding",
    index,
    embedding: encoding === "base64" ? encodeVector(vectorFor(text)) : vectorFor(text),
  }));
  return { object: "list", data, model: "embed-small", usage: { prompt_tokens: tokens, total_tokens: tokens } };
}

Deno.test("an answer that needs no change reaches the client as its bytes, only the model id spliced", async () => {
  for (const base64 of [true, false]) {
    // A field the gateway would not write itself shows the bytes are the upstream's.
    const sent = JSON.stringify(answer(base64, { id: "emb-7f3a", created: 1764650000 }));
    const got = await through(sent, base64 ? "base64" : "float");
    assert.equal(got.status, 200);
    assert.equal(got.text, sent.replace('"model":"text-embedding-3-small"', '"model":"embed-small"'));
  }
});

Deno.test("an answer that needs a change is written again by the gateway", async () => {
  const ordered = answer(true);
  const cases: { name: string; text: string; encoding: "float" | "base64"; tokens?: number }[] = [
    { name: "base64 to a client that asked for floats", text: JSON.stringify(answer(true)), encoding: "float" },
    { name: "floats to a client that asked for base64", text: JSON.stringify(answer(false)), encoding: "base64" },
    {
      name: "no usage (estimated)",
      text: JSON.stringify({ ...answer(true), usage: undefined }),
      encoding: "base64",
      tokens: 6,
    },
    {
      name: "vectors out of order",
      text: JSON.stringify({ ...ordered, data: [...(ordered.data as unknown[])].reverse() }),
      encoding: "base64",
    },
    { name: "a spaced-out model id", text: JSON.stringify(answer(true), null, 1), encoding: "base64" },
  ];
  for (const { name, text, encoding, tokens } of cases) {
    const got = await through(text, encoding);
    assert.equal(got.status, 200, name);
    assert.deepEqual(JSON.parse(got.text), written(encoding, tokens), name);
  }
});

Deno.test("an answer that quotes the upstream's key, plainly or with escapes, never passes as it came", async () => {
  const escaped = "\\u0055" + KEY.slice(1);
  const cases = [
    { name: "the key in a field", text: JSON.stringify(answer(true, { note: `key ${KEY}` })) },
    {
      name: "the key escaped in a field",
      text: JSON.stringify(answer(true, { note: "x" })).replace('"x"', `"${escaped}"`),
    },
  ];
  for (const { name, text } of cases) {
    const got = await through(text, "base64");
    assert.equal(got.status, 200, name);
    assert.ok(!got.text.includes(KEY) && !got.text.includes(escaped), name);
    assert.deepEqual(JSON.parse(got.text), written("base64"), name);
  }
  // In a vector it is refused: the careful path passes only vectors, and none that holds a secret.
  const inVector = answer(true);
  (inVector.data as { embedding: string }[])[0].embedding = KEY + "A".repeat(16 - (KEY.length % 16));
  const got = await through(JSON.stringify(inVector), "base64");
  assert.equal(got.status, 502);
  assert.ok(!got.text.includes(KEY), got.text);
});

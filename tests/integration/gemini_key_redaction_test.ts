/**
 * @module A Gemini upstream that quotes its key (sent as x-goog-api-key) never gets it to a client: in a stream passed
 * through to a Gemini client, with the key split across two of the upstream's chunks, and in the same stream
 * translated for an Anthropic client.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, sseReply } from "../_fake_upstream.ts";
import { GEMINI_KEY, geminiUpstreamYaml } from "../_gemini_upstream.ts";
import { bodyReader, messagesBody, readText, startGateway, type TestGateway } from "../_helpers.ts";

const STREAM = "POST /gem/v1beta/models/gemini-test:streamGenerateContent";

/** One Gemini stream chunk with `text`; the last one finishes and carries usage. */
function chunk(text: string, last = false): string {
  const candidate = { content: { role: "model", parts: [{ text }] }, ...(last ? { finishReason: "STOP" } : {}) };
  const usage = last ? { usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 } } : {};
  return `data: ${JSON.stringify({ candidates: [candidate], ...usage, modelVersion: "gemini-test" })}\r\n\r\n`;
}

async function gateway(url: string): Promise<TestGateway & { token: string }> {
  const gw = await startGateway(url, { ...geminiUpstreamYaml(url), env: { TEST_GEMINI_KEY: GEMINI_KEY } });
  return Object.assign(gw, { token: (await gw.store.createToken({ group: "gem" })).secret });
}

function geminiStream(gw: TestGateway & { token: string }): Promise<Response> {
  const body = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
  return gw.post("/v1beta/models/gemini-test:streamGenerateContent?alt=sse", body, { "x-goog-api-key": gw.token });
}

Deno.test("a Gemini upstream's key in a later stream chunk is redacted, passed through and translated", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(STREAM, () => sseReply(chunk("Hello. ") + chunk(`your key is ${GEMINI_KEY}`, true)));
  await using gw = await gateway(upstream.url);
  const anthropic = await gw.post("/v1/messages", messagesBody({ model: "gemini-test", stream: true }), {
    "x-api-key": gw.token,
  });
  for (const res of [await geminiStream(gw), anthropic]) {
    const text = await readText(res);
    assert.equal(res.status, 200, text);
    assert.ok(!text.includes(GEMINI_KEY), `the key reached the client: ${text}`);
    assert.match(text, /your key is \[redacted\]/);
  }
  assert.equal(upstream.requests[0].headers.get("x-goog-api-key"), GEMINI_KEY, "the key is the one the upstream got");
});

Deno.test("a Gemini upstream's key split across two of its chunks is redacted on the way to a Gemini client", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  upstream.routes.set(STREAM, () => stream.response);
  await using gw = await gateway(upstream.url);
  const answer = geminiStream(gw);
  const quoting = chunk(`your key is ${GEMINI_KEY}`, true);
  const split = quoting.indexOf(GEMINI_KEY) + 9;
  stream.send(chunk("Hello. ") + quoting.slice(0, split));
  const res = await answer;
  assert.equal(res.status, 200);
  await using body = bodyReader(res);
  // Everything before the key's first part has reached the client, so the gateway has read that chunk on its own.
  let text = await body.until((got) => got.includes("your key is "));
  stream.send(quoting.slice(split));
  stream.end();
  text += await body.rest();
  assert.ok(!text.includes(GEMINI_KEY.slice(0, 9)), `the key's first part reached the client: ${text}`);
  assert.match(text, /"text":"your key is \[redacted\]"/);
});

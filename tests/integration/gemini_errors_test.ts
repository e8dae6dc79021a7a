/**
 * @module Gemini clients' errors over real HTTP: Google's shape and statuses before the answer, in-band after it (SSE
 * or the JSON array), the gateway's own limits, and inputs that cannot be read.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { geminiCall as gemini } from "../_gemini_reader.ts";
import { fixture, readSse, readText, startGateway } from "../_helpers.ts";

const ANTH = "POST /anth/v1/messages";

const ASK = {
  contents: [{ role: "user", parts: [{ text: "What time is it?" }] }],
  generationConfig: { maxOutputTokens: 100 },
};

Deno.test("errors come in Google's shape with Google's statuses", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    ANTH,
    () =>
      jsonReply({ type: "error", error: { type: "rate_limit_error", message: "slow down" } }, 429, {
        "retry-after": "7",
      }),
  );
  await using gw = await startGateway(upstream.url);
  const cases: [string, unknown, HeadersInit, number, string][] = [
    ["/v1beta/models/claude-test:generateContent", ASK, { "x-goog-api-key": "" }, 401, "UNAUTHENTICATED"],
    ["/v1beta/models/nope:generateContent", ASK, {}, 404, "NOT_FOUND"],
    ["/v1beta/models/claude-test:generateContent", { contents: [] }, {}, 400, "INVALID_ARGUMENT"],
    ["/v1beta/models/claude-test:predictLongRunning", ASK, {}, 404, "NOT_FOUND"],
    ["/v1beta/models/claude-test:generateContent", ASK, {}, 429, "RESOURCE_EXHAUSTED"],
  ];
  for (const [path, body, headers, status, name] of cases) {
    const res = await gemini(gw, path, body, headers);
    const error = (await res.json()).error;
    assert.equal(res.status, status, path);
    assert.deepEqual([error.code, error.status], [status, name], path);
    assert.equal(typeof error.message, "string");
    if (status === 400) assert.match(error.message, /^contents/);
    // A Gemini client is pointed at its own API's listing, which it can call with the same key.
    if (path.includes("nope")) assert.match(error.message, /check GET \/v1beta\/models for the models you can use/);
    if (status === 429) {
      assert.deepEqual(error.details, [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }]);
    }
  }
});

Deno.test("an inline text file becomes a document; one that is not base64 is a 400 naming it", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => jsonReply(JSON.parse(fixture("anthropic/text.json"))));
  await using gw = await startGateway(upstream.url);
  const part = (data: string) => ({
    contents: [{ role: "user", parts: [{ inlineData: { mimeType: "text/plain", data } }, { text: "Summarise." }] }],
  });
  const ok = await gemini(gw, "/v1beta/models/claude-test:generateContent", part(btoa("Notes.")));
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  const sent = (upstream.requests[0].body!.messages as { content: unknown[] }[])[0].content[0];
  assert.deepEqual(sent, { type: "document", source: { type: "text", media_type: "text/plain", data: "Notes." } });
  const bad = await gemini(gw, "/v1beta/models/claude-test:generateContent", part("%%%"));
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error.message, /^contents\[0\]\.parts\[0\]\.inlineData\.data: is not base64/);
});

Deno.test("the gateway's own limits answer a Gemini client RESOURCE_EXHAUSTED with how long to wait", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => jsonReply(JSON.parse(fixture("anthropic/text.json"))));
  await using gw = await startGateway(upstream.url, {
    extraGroups: "  - { name: capped, listing: anthropic, models: [claude-test], limits: { requests_per_minute: 1 } }",
  });
  const token = (await gw.store.createToken({ group: "capped" })).secret;
  const path = "/v1beta/models/claude-test:generateContent";
  const first = await gemini(gw, path, { contents: ASK.contents }, { "x-goog-api-key": token });
  assert.equal(first.status, 200);
  await first.body?.cancel();
  const second = await gemini(gw, path, { contents: ASK.contents }, { "x-goog-api-key": token });
  assert.equal(second.status, 429);
  const error = (await second.json()).error;
  assert.equal(error.status, "RESOURCE_EXHAUSTED");
  assert.match(error.details[0].retryDelay, /^\d+s$/);
  assert.equal(upstream.requests.length, 1);
});

Deno.test("a stream that fails after its start ends with Google's error: an SSE event, or the array's last element", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => sseReply(fixture("anthropic/error_mid.sse")));
  await using gw = await startGateway(upstream.url);
  const sse = await readSse(await gemini(gw, "/v1beta/models/claude-test:streamGenerateContent?alt=sse", ASK));
  const last = JSON.parse(sse.at(-1)!.data);
  assert.deepEqual([last.error.status, last.error.message], ["UNAVAILABLE", "Upstream overloaded"]);
  assert.ok(sse.slice(0, -1).every((e) => !JSON.parse(e.data).candidates[0].finishReason), "no finish before it");
  const array = JSON.parse(await readText(await gemini(gw, "/v1beta/models/claude-test:streamGenerateContent", ASK)));
  assert.equal(array.at(-1).error.status, "UNAVAILABLE");
});

Deno.test("while tracing is on, a key in the URL is refused as UNAUTHENTICATED and the header still works", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(ANTH, () => jsonReply(JSON.parse(fixture("anthropic/text.json"))));
  await using gw = await startGateway(upstream.url, { env: { OTEL_DENO: "true" } });
  const token = gw.tokens.default;
  const urls = [
    `/v1beta/models/claude-test:generateContent?key=${token}`,
    `/v1/models/claude-test:generateContent?key=${token}`,
    `/v1alpha/models?key=${token}`,
    `/v1/models?key=${token}`,
  ];
  // Refused alone and beside the header: either way the URL has been recorded.
  for (const [i, path] of urls.entries()) {
    const res = await gemini(gw, path, path.includes(":") ? ASK : undefined, i % 2 ? {} : { "x-goog-api-key": "" });
    const text = await readText(res);
    assert.equal(res.status, 401, path);
    const error = JSON.parse(text).error;
    assert.deepEqual([error.code, error.status], [401, "UNAUTHENTICATED"], path);
    assert.match(error.message, /x-goog-api-key/, path);
    assert.ok(!text.includes(token), text);
  }
  assert.equal(upstream.requests.length, 0);
  const res = await gemini(gw, "/v1beta/models/claude-test:generateContent", ASK, { "x-goog-api-key": token });
  assert.equal(res.status, 200, await readText(res));
});

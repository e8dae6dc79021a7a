/**
 * @module The access token the gateway gets from the service account is a secret like a key, for Claude on Vertex and
 * for Gemini on Vertex: a Vertex that quotes it in an answer, a stream, an error or its request id never gets it to a
 * client, a log line or the request log.
 */
import assert from "node:assert/strict";
import { fixtureEvents } from "../_cloud_answers.ts";
import { startClouds } from "../_clouds.ts";
import { anthropicMessage, readText } from "../_helpers.ts";
import { requestLog } from "../../src/usage/query.ts";

/** Claude's text stream with `text` in its one delta. */
function streamQuoting(text: string): Record<string, unknown>[] {
  return fixtureEvents("anthropic/text.sse").map((event) =>
    event.type === "content_block_delta" ? { ...event, delta: { type: "text_delta", text } } : event
  );
}

/** A Gemini answer, whole or as one SSE chunk, whose text quotes `token`. */
function geminiQuoting(token: string, stream: boolean): string {
  const body = JSON.stringify({
    candidates: [{ content: { role: "model", parts: [{ text: `your token is ${token}` }] }, finishReason: "STOP" }],
    usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 },
  });
  return stream ? `data: ${body}\r\n\r\n` : body;
}

Deno.test("a Vertex access token quoted by Claude or Gemini there reaches no client, log line or request log", async () => {
  await using c = await startClouds({
    extraUpstreams: `  - { name: gv, protocol: gemini-vertex, project: fake-project, region: us-east5,
      base_url: "{vertex}", timeout_ms: 5000, models: [{ id: gemini-v, upstream_id: gemini-2.5-pro }] }`,
    extraGroups: "  - { name: gv, listing: anthropic, models: [gemini-v, claude-vertex] }\n",
    routing: "max_attempts: 1",
  });
  const token = (await c.gw.store.createToken({ group: "gv" })).secret;
  let mode: "whole" | "refused" = "whole";
  const geminiTokens: string[] = [];
  c.vertex.answer = (seen) => {
    const quote = `your token is ${seen.token}`;
    if (mode === "refused") {
      return { error: "rate_limit_error", status: 429, message: quote, headers: { "request-id": seen.token } };
    }
    return seen.action === "streamRawPredict" ? { events: streamQuoting(quote) } : { json: anthropicMessage(quote) };
  };
  c.vertex.gemini = (seen) => {
    const bearer = (seen.headers.get("authorization") ?? "").replace(/^Bearer /, "");
    geminiTokens.push(bearer);
    const headers = { "request-id": bearer, "content-type": "application/json" };
    if (mode === "refused") {
      const error = { error: { code: 429, status: "RESOURCE_EXHAUSTED", message: `your token is ${bearer}` } };
      return Response.json(error, { status: 429, headers });
    }
    const stream = seen.path.includes("streamGenerateContent");
    if (stream) headers["content-type"] = "text/event-stream";
    return new Response(geminiQuoting(bearer, stream), { headers });
  };
  const texts: string[] = [];
  for (const m of ["whole", "refused"] as const) {
    mode = m;
    for (const model of ["claude-vertex", "gemini-v"]) {
      for (const stream of [false, true]) {
        const messages = [{ role: "user", content: "Hi" }];
        const asks = [
          c.gw.post("/v1/messages", { model, max_tokens: 16, stream, messages }, { "x-api-key": token }),
          c.gw.post("/v1/chat/completions", { model, stream, messages }, { "x-api-key": token }),
        ];
        for (const res of await Promise.all(asks)) {
          const text = await readText(res);
          assert.equal(res.status, m === "whole" ? 200 : 429, `${model} ${m}: ${text}`);
          texts.push(text, JSON.stringify([...res.headers]));
        }
      }
    }
  }
  const issued = [...new Set([...c.vertex.requests.map((r) => r.token), ...geminiTokens])];
  assert.ok(geminiTokens.length > 0 && c.vertex.requests.length > 0, "both models were asked");
  assert.ok(issued.every((t) => t.startsWith("ya29.")), "the fake issued the tokens used");
  await c.gw.flush();
  const written = JSON.stringify(c.gw.logs) + JSON.stringify(await requestLog(c.gw.store.kv, { limit: 100 }));
  for (const issuedToken of issued) {
    for (const text of texts) assert.ok(!text.includes(issuedToken), `the token reached a client: ${text}`);
    assert.ok(!written.includes(issuedToken), "the token was written down");
  }
  assert.ok(texts.some((text) => text.includes("your token is [redacted]")));
  assert.ok(!written.includes(c.vertex.privateKey.slice(40, 80)), "the private key was written down");
});

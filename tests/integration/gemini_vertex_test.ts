/**
 * @module Gemini on Vertex AI (`protocol: gemini-vertex`) on the fake Vertex: the service account's token, the
 * publisher path, a tool loop whose signature comes back, countTokens unwrapped, and a Gemini client passed through.
 */
import assert from "node:assert/strict";
import { startClouds } from "../_clouds.ts";
import { geminiResponder, type GeminiTurn } from "../_gemini_upstream.ts";
import { readSse } from "../_helpers.ts";

const TURNS: GeminiTurn[] = [
  { parts: [{ functionCall: { name: "get_time", args: { tz: "UTC" } }, thoughtSignature: "dnNpZw==" }] },
  { parts: [{ text: "Noon." }] },
];

function clouds() {
  return startClouds({
    extraUpstreams: `  - { name: gv, protocol: gemini-vertex, project: fake-project, region: us-east5,
      base_url: "{vertex}", timeout_ms: 5000, models: [{ id: gemini-v, upstream_id: gemini-2.5-pro }] }`,
    extraGroups: "  - { name: gv, listing: anthropic, models: [gemini-v] }\n",
  });
}

Deno.test("an Anthropic client's tool loop on Gemini through Vertex, with the service account's token", async () => {
  await using c = await clouds();
  const seen: { path: string; body: Record<string, unknown> }[] = [];
  const gemini = geminiResponder(TURNS, true);
  c.vertex.gemini = (request, req) => {
    seen.push({ path: request.path, body: request.body! });
    return gemini(request, req);
  };
  const token = (await c.gw.store.createToken({ group: "gv" })).secret;
  const tools = [{ name: "get_time", input_schema: { type: "object", properties: { tz: { type: "string" } } } }];
  const ask = { role: "user" as const, content: "Time?" };
  const first = await c.gw.post("/v1/messages", { model: "gemini-v", max_tokens: 100, tools, messages: [ask] }, {
    "x-api-key": token,
  });
  const message = await first.json();
  assert.equal(first.status, 200, JSON.stringify(message));
  const call = message.content[0];
  const second = await c.gw.post("/v1/messages", {
    model: "gemini-v",
    max_tokens: 100,
    tools,
    messages: [ask, { role: "assistant", content: message.content }, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: call.id, content: "12:00" }],
    }],
  }, { "x-api-key": token });
  assert.equal(second.status, 200, await second.clone().text());
  assert.deepEqual((await second.json()).content, [{ type: "text", text: "Noon." }]);
  assert.equal(c.vertex.grants.length, 1, "one token for both calls");
  const counted = await c.gw.post("/v1/messages/count_tokens", { model: "gemini-v", messages: [ask] }, {
    "x-api-key": token,
  });
  assert.deepEqual(await counted.json(), { input_tokens: 42 });
  assert.deepEqual(seen.map((s) => s.path.split("/publishers/")[1]), [
    "google/models/gemini-2.5-pro:generateContent",
    "google/models/gemini-2.5-pro:generateContent",
    "google/models/gemini-2.5-pro:countTokens",
  ]);
  const model = (seen[1].body.contents as { parts: Record<string, unknown>[] }[])[1];
  assert.equal(model.parts[0].thoughtSignature, "dnNpZw==");
  assert.ok(Array.isArray(seen[2].body.contents), "Vertex counts the request's own fields");
});

Deno.test("a Gemini client streams from Gemini on Vertex", async () => {
  await using c = await clouds();
  c.vertex.gemini = geminiResponder([TURNS[1]], true);
  const token = (await c.gw.store.createToken({ group: "gv" })).secret;
  const res = await c.gw.post("/v1beta/models/gemini-v:streamGenerateContent?alt=sse", {
    contents: [{ role: "user", parts: [{ text: "Time?" }] }],
  }, { "x-goog-api-key": token });
  const events = await readSse(res);
  assert.equal(JSON.parse(events[0].data).candidates[0].content.parts[0].text, "Noon.");
});

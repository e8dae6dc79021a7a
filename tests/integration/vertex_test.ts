/**
 * @module Claude on Google Vertex AI through the gateway, over real HTTP against the fake Vertex and its token
 * endpoint: one service-account token for many requests, refreshed before it expires and after a 401, Vertex's body
 * shape, answers and errors as the Anthropic API gives them, a failing stream, token counting, and no secret leaked.
 */
import assert from "node:assert/strict";
import { fixtureEvents } from "../_cloud_answers.ts";
import { cloudSecrets, startClouds, VERTEX_MODEL } from "../_clouds.ts";
import { fixture, readSse } from "../_helpers.ts";

const BODY = { model: "claude-vertex", max_tokens: 64, messages: [{ role: "user", content: "Hello" }] };

Deno.test("Vertex: messages go to rawPredict and streamRawPredict with one token from the service account", async () => {
  await using clouds = await startClouds();
  const whole = await clouds.post("/v1/messages", BODY, { "anthropic-beta": "context-1m-2025-08-07,oauth-2025-04-20" });
  assert.equal(whole.status, 200);
  assert.deepEqual(await whole.json(), JSON.parse(fixture("anthropic/text.json")));
  const streamed = await readSse(await clouds.post("/v1/messages", { ...BODY, stream: true }));
  assert.deepEqual(streamed.map((e) => JSON.parse(e.data)), fixtureEvents("anthropic/text.sse"));

  const [first, second] = clouds.vertex.requests;
  assert.deepEqual([first.action, second.action], ["rawPredict", "streamRawPredict"]);
  assert.equal(first.model, VERTEX_MODEL);
  assert.deepEqual(first.body, {
    max_tokens: 64,
    messages: [{ role: "user", content: "Hello" }],
    anthropic_version: "vertex-2023-10-16",
  });
  assert.equal(second.body.stream, true);
  assert.equal(first.headers.get("anthropic-beta"), "context-1m-2025-08-07");
  assert.equal(clouds.vertex.grants.length, 1, "one token for both requests");
  assert.equal(first.token, second.token);
  const logs = JSON.stringify(clouds.gw.logs);
  for (const secret of cloudSecrets(clouds)) assert.ok(!logs.includes(secret));
});

Deno.test("Vertex: the token is refreshed ahead of its expiry, not once per request", async () => {
  const clock = { now: Date.UTC(2026, 5, 1, 12) };
  await using clouds = await startClouds({ clock, vertex: { expiresIn: 3600 } });
  const ask = async () => {
    const res = await clouds.post("/v1/messages", BODY);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  };
  await ask();
  clock.now += 30 * 60_000;
  await ask();
  assert.equal(clouds.vertex.grants.length, 1);
  clock.now += 26 * 60_000; // four minutes before expiry: a new token before the old one runs out
  await ask();
  assert.equal(clouds.vertex.grants.length, 2);
  assert.notEqual(clouds.vertex.requests[2].token, clouds.vertex.requests[1].token);
  assert.deepEqual(clouds.vertex.refusedTokens, []);
});

Deno.test("Vertex: a token refused with 401 is replaced once and the request retried, unseen by the client", async () => {
  await using clouds = await startClouds();
  const first = await clouds.post("/v1/messages", BODY);
  await first.body?.cancel();
  clouds.vertex.revoke(clouds.vertex.requests[0].token);
  const res = await clouds.post("/v1/messages", BODY);
  assert.equal(res.status, 200);
  await res.body?.cancel();
  assert.equal(clouds.vertex.grants.length, 2);
  assert.equal(clouds.vertex.refusedTokens.length, 1);
  assert.equal(clouds.gw.exchanges[1].attempts.length, 1, "the retry is the transport's, not a second attempt");
});

Deno.test("Vertex: a token endpoint that refuses the grant is the gateway's failure, named without secrets", async () => {
  await using clouds = await startClouds({ routing: "retry_budget: { ratio: 0, min_retries: 0 }" });
  clouds.vertex.tokenFailure = { status: 400, error: "invalid_grant" };
  const res = await clouds.post("/v1/messages", BODY);
  assert.equal(res.status, 502);
  const text = await res.text();
  assert.match(text, /could not get an access token: The token endpoint answered 400 \(invalid_grant\)/);
  for (const secret of cloudSecrets(clouds)) assert.ok(!text.includes(secret));
});

const ERRORS = [
  { answer: { error: "overloaded_error", status: 529, message: "Overloaded" }, client: 529, type: "overloaded_error" },
  { answer: { error: "rate_limit_error", status: 429, message: "Slow down" }, client: 429, type: "rate_limit_error" },
  {
    answer: { error: "invalid_request_error", status: 400, message: "bad" },
    client: 400,
    type: "invalid_request_error",
  },
];
for (const c of ERRORS) {
  Deno.test(`Vertex: the model's own ${c.answer.status} reaches an Anthropic client as ${c.type}`, async () => {
    await using clouds = await startClouds({ routing: "retry_budget: { ratio: 0, min_retries: 0 }" });
    clouds.vertex.answer = () => c.answer;
    const res = await clouds.post("/v1/messages", BODY);
    assert.equal(res.status, c.client);
    const body = await res.json();
    assert.deepEqual(body.error, { type: c.type, message: c.answer.message });
    assert.equal(body.request_id, res.headers.get("request-id"));
  });
}

const GOOGLE_ERRORS = [
  { status: 429, google: "RESOURCE_EXHAUSTED", client: 429, type: "rate_limit_error", message: /Quota exceeded/ },
  { status: 404, google: "NOT_FOUND", client: 502, type: "api_error", message: /not found/ },
  { status: 403, google: "PERMISSION_DENIED", client: 502, type: "api_error", message: /gateway's credentials/ },
  { status: 503, google: "UNAVAILABLE", client: 503, type: "api_error", message: /unavailable/ },
];
for (const c of GOOGLE_ERRORS) {
  Deno.test(`Vertex: Google's ${c.status} ${c.google} reaches an Anthropic client as ${c.client} ${c.type}`, async () => {
    await using clouds = await startClouds({ routing: "retry_budget: { ratio: 0, min_retries: 0 }" });
    const message = c.status === 429
      ? "Quota exceeded for the base model"
      : `The resource is ${c.google}: not found or unavailable`;
    clouds.vertex.answer = () => ({ error: "", status: c.status, message, google: c.google });
    const res = await clouds.post("/v1/messages", BODY);
    assert.equal(res.status, c.client);
    const { error, request_id } = await res.json();
    assert.equal(error.type, c.type);
    assert.match(error.message, c.message);
    assert.equal(request_id, res.headers.get("request-id"));
  });
}

Deno.test("Vertex: a service account whose every token is refused is the gateway's failure after one refresh", async () => {
  await using clouds = await startClouds({ routing: "retry_budget: { ratio: 0, min_retries: 0 }" });
  clouds.vertex.refuseAllTokens = true;
  const refused = await clouds.post("/v1/messages", BODY);
  assert.equal(refused.status, 502);
  assert.match((await refused.json()).error.message, /rejected the gateway's credentials/);
  assert.equal(clouds.vertex.grants.length, 2);
});

Deno.test("Vertex: an error event mid-stream is relayed in-band; a stream that stops early ends with an error", async () => {
  await using clouds = await startClouds();
  clouds.vertex.answer = () => ({
    events: fixtureEvents("anthropic/text.sse"),
    exception: { after: 4, type: "overloaded_error", message: "Overloaded" },
  });
  const failed = await readSse(await clouds.post("/v1/messages", { ...BODY, stream: true }));
  assert.equal(failed.at(-1)?.event, "error");
  assert.deepEqual(JSON.parse(failed.at(-1)!.data).error, { type: "overloaded_error", message: "Overloaded" });

  clouds.vertex.answer = () => ({ events: fixtureEvents("anthropic/text.sse"), cutAfter: 4 });
  const cut = await readSse(await clouds.post("/v1/messages", { ...BODY, stream: true }));
  assert.equal(cut.at(-1)?.event, "error");
  assert.ok(!cut.some((e) => e.event === "message_stop"));
});

Deno.test("Vertex: count_tokens uses the count-tokens endpoint; where it is not offered, a flagged estimate", async () => {
  await using clouds = await startClouds();
  clouds.vertex.answer = () => ({ json: {}, inputTokens: 77 });
  const { max_tokens: _, ...count } = BODY;
  assert.deepEqual(await (await clouds.post("/v1/messages/count_tokens", count)).json(), { input_tokens: 77 });
  assert.equal(clouds.vertex.requests[0].action, "count-tokens");
  assert.equal(clouds.vertex.requests[0].model, VERTEX_MODEL);
  clouds.vertex.answer = () => ({ error: "not_found_error", status: 404, message: "count-tokens is not offered here" });
  const estimate = await (await clouds.post("/v1/messages/count_tokens", count)).json();
  assert.equal(estimate.estimated, true);
});

/** @module The official SDKs against the gateway: listing with auto-pagination, messages, streams and error classes. */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { anthropicMessage, BULK_MODELS, deadlineFetch, fixture, startGateway } from "../_helpers.ts";

Deno.test("Anthropic SDK: models.list() auto-paginates through every model and stops", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const client = new Anthropic({ apiKey: gw.tokens.bulk, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.deepEqual(ids, BULK_MODELS);
  const one = await client.models.retrieve("bulk-07");
  assert.equal(one.id, "bulk-07");
  assert.equal(one.type, "model");
});

Deno.test("Anthropic SDK: messages.create() returns the upstream's message", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage("Hi there")));
  await using gw = await startGateway(upstream.url);
  const client = new Anthropic({ apiKey: gw.tokens.default, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const message = await client.messages.create({
    model: "claude-test",
    max_tokens: 16,
    messages: [{ role: "user", content: "Hi" }],
  });
  assert.equal(message.content[0].type === "text" && message.content[0].text, "Hi there");
  assert.match(message._request_id ?? "", /^req_/);
  // SDK >= 1.0 sends its key as Bearer and its own version; both reach the right places.
  assert.equal(upstream.requests[0].headers.get("anthropic-version"), "2026-10-21");
});

Deno.test("Anthropic SDK: messages.stream() and finalMessage() assemble the streamed message", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic_text.sse")));
  await using gw = await startGateway(upstream.url);
  const client = new Anthropic({ apiKey: gw.tokens.default, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const stream = client.messages.stream({
    model: "claude-test",
    max_tokens: 16,
    messages: [{ role: "user", content: "Hi" }],
  });
  const deltas: string[] = [];
  stream.on("text", (text) => deltas.push(text));
  const message = await stream.finalMessage();
  assert.equal(deltas.join(""), "Hello world é");
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(message.usage.output_tokens, 3);
});

Deno.test("Anthropic SDK: a bad token is an AuthenticationError and an unknown model a NotFoundError", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const bad = new Anthropic({ apiKey: "sk-wrong", baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const body = { model: "claude-test", max_tokens: 8, messages: [{ role: "user" as const, content: "x" }] };
  await assert.rejects(bad.messages.create(body), Anthropic.AuthenticationError);
  await assert.rejects(bad.models.list(), Anthropic.AuthenticationError);
  const good = new Anthropic({ apiKey: gw.tokens.default, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  await assert.rejects(good.messages.create({ ...body, model: "bulk-01" }), (err: unknown) => {
    assert.ok(err instanceof Anthropic.NotFoundError);
    assert.match(err.message, /GET \/v1\/models/);
    return true;
  });
  await assert.rejects(good.models.retrieve("bulk-01"), Anthropic.NotFoundError);
});

Deno.test("Anthropic SDK: a base URL that already ends in /v1 still works", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const client = new Anthropic({
    apiKey: gw.tokens.default,
    baseURL: `${gw.url}/v1`,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
  const message = await client.messages.create({
    model: "claude-test",
    max_tokens: 8,
    messages: [{ role: "user", content: "x" }],
  });
  assert.equal(message.id, "msg_up");
});

Deno.test("OpenAI SDK: models.list() sees the openai group's models and errors map to its classes", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const client = new OpenAI({ apiKey: gw.tokens.oa, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.deepEqual(ids, ["gpt-test", "claude-test", "gpt-ha"]);
  assert.equal((await client.models.retrieve("gpt-test")).object, "model");
  await assert.rejects(client.models.retrieve("bulk-01"), OpenAI.NotFoundError);
  const bad = new OpenAI({ apiKey: "sk-wrong", baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
  await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);
});

/**
 * @module Gateway-run batches through the batch routes with the official SDKs: an Anthropic batch naming an
 * OpenAI-compatible model and a Gemini model (create, polling retrieve to ended, results() matched by custom_id,
 * list, cancel), and an OpenAI batch whose input file is on OpenAI but whose model is on a chat-compatible service
 * (files.create, batches.create, polling to completed, the output file read and matched by custom_id); a second
 * token's 404s and empty listings.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI, { toFile } from "openai";
import assert from "node:assert/strict";
import { chatCompletion, type FakeUpstream, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { fakeBatchApi } from "../_fake_batch_api.ts";
import { GEMINI_KEY, geminiResponder } from "../_gemini_upstream.ts";
import { deadlineFetch, startGateway, type TestGateway } from "../_helpers.ts";
import { heldChat, marker } from "../_gateway_batches.ts";

const KEYS = { OAI_BATCH_KEY: "oai-team-key", CHAT_KEY: "upstream-openai-key", TEST_GEMINI_KEY: GEMINI_KEY };

/** A gateway with OpenAI (batch API: it holds input files), a chat-compatible service and Gemini; its batches run. */
async function sdkGateway(upstream: FakeUpstream, filesUrl: string, batches = "{ poll_ms: 50 }") {
  const gw = await startGateway(upstream.url, {
    configYaml: `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
batches: ${batches}
upstreams:
  - { name: openai, protocol: openai, batch_api: true, base_url: "${filesUrl}/openai/v1", api_key_env: OAI_BATCH_KEY,
      models: [{ id: gpt-batch, upstream_id: gpt-up-1 }] }
  - { name: chat, protocol: openai, base_url: "${upstream.url}/oai/v1", api_key_env: CHAT_KEY, models: [gpt-test] }
  - { name: gem, protocol: gemini, base_url: "${upstream.url}/gem/v1beta", api_key_env: TEST_GEMINI_KEY,
      models: [gemini-test] }
groups:
  - { name: default, listing: auto, models: [gpt-batch, gpt-test, gemini-test] }
usage: { flush_ms: 60000, auth_refresh_ms: 100 }
`,
    env: KEYS,
    batches: {},
  });
  const other = (await gw.store.createToken({ group: "default" })).secret;
  return Object.assign(gw, { other });
}

function anthropic(gw: TestGateway, apiKey = gw.tokens.default): Anthropic {
  return new Anthropic({ apiKey, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
}

/** Polls as a client does until `done` holds. */
async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`never done: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function answerChatAndGemini(upstream: FakeUpstream): void {
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    (seen) => jsonReply(chatCompletion(`chat: ${marker(seen.body)}`)),
  );
  upstream.routes.set(
    "POST /gem/v1beta/models/gemini-test:generateContent",
    geminiResponder(() => ({ parts: [{ text: "gemini: hello" }] })),
  );
}

Deno.test("the Anthropic SDK runs a batch over a chat and a Gemini model through the gateway and reads its results", async () => {
  await using upstream = fakeUpstream();
  answerChatAndGemini(upstream);
  await using files = fakeBatchApi({ "oai-team-key": "team" }, ["gpt-up-1"], () => Date.now());
  await using gw = await sdkGateway(upstream, files.url);
  const client = anthropic(gw);
  const ask = (model: string, text: string) => ({
    model,
    max_tokens: 32,
    messages: [{ role: "user" as const, content: text }],
  });
  const made = await client.messages.batches.create({
    requests: [
      { custom_id: "via-chat", params: ask("gpt-test", "one") },
      { custom_id: "via-gemini", params: ask("gemini-test", "two") },
    ],
  });
  assert.match(made.id, /^msgbatch_/);
  assert.equal(made.processing_status, "in_progress");
  const ended = await poll(() => client.messages.batches.retrieve(made.id), (b) => b.processing_status === "ended");
  assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 2, errored: 0, canceled: 0, expired: 0 });
  assert.ok(ended.results_url?.startsWith(gw.url), "results_url points at the gateway");
  const results = new Map<string, Anthropic.Messages.MessageBatchIndividualResponse>();
  for await (const line of await client.messages.batches.results(made.id)) results.set(line.custom_id, line);
  const text = (id: string) => {
    const result = results.get(id)?.result;
    assert.equal(result?.type, "succeeded");
    const block = result.message.content[0];
    assert.equal(block.type, "text");
    return block.text;
  };
  assert.equal(text("via-chat"), "chat: one");
  assert.equal(text("via-gemini"), "gemini: hello");
  assert.deepEqual((await client.messages.batches.list()).data.map((b) => b.id), [made.id]);
  // Another token of the same group: the provider's 404, and an empty listing.
  const stranger = anthropic(gw, gw.other);
  await assert.rejects(stranger.messages.batches.retrieve(made.id), (err) => err instanceof Anthropic.NotFoundError);
  await assert.rejects(
    (async () => await stranger.messages.batches.results(made.id))(),
    (err) => err instanceof Anthropic.NotFoundError,
  );
  assert.deepEqual((await stranger.messages.batches.list()).data, []);
  assert.equal((await client.messages.batches.delete(made.id)).type, "message_batch_deleted");
});

Deno.test("the Anthropic SDK cancels a gateway-run batch: the request running finishes, the rest are canceled", async () => {
  await using upstream = fakeUpstream();
  const held = heldChat(upstream, "chat:");
  await using files = fakeBatchApi({ "oai-team-key": "team" }, ["gpt-up-1"], () => Date.now());
  await using gw = await sdkGateway(upstream, files.url, "{ poll_ms: 50, concurrency: 1 }");
  const client = anthropic(gw);
  const made = await client.messages.batches.create({
    requests: ["a", "b", "c"].map((id) => ({
      custom_id: id,
      params: { model: "gpt-test", max_tokens: 8, messages: [{ role: "user" as const, content: id }] },
    })),
  });
  await held.arrived;
  const canceling = await client.messages.batches.cancel(made.id);
  assert.equal(canceling.processing_status, "canceling");
  // Results asked for before the end: a 409 in Anthropic's error shape, as for a native batch.
  const early = await deadlineFetch()(`${gw.url}/v1/messages/batches/${made.id}/results`, {
    headers: { "x-api-key": gw.tokens.default },
  });
  assert.equal(early.status, 409);
  assert.equal((await early.json()).error.type, "invalid_request_error");
  held.release();
  const ended = await poll(() => client.messages.batches.retrieve(made.id), (b) => b.processing_status === "ended");
  assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 1, errored: 0, canceled: 2, expired: 0 });
  const kinds: Record<string, string> = {};
  for await (const line of await client.messages.batches.results(made.id)) kinds[line.custom_id] = line.result.type;
  assert.deepEqual(kinds, { a: "succeeded", b: "canceled", c: "canceled" });
});

Deno.test("the OpenAI SDK runs a batch onto a chat-compatible model through the gateway and reads its output file", async () => {
  await using upstream = fakeUpstream();
  answerChatAndGemini(upstream);
  await using files = fakeBatchApi({ "oai-team-key": "team" }, ["gpt-up-1"], () => Date.now());
  await using gw = await sdkGateway(upstream, files.url);
  const client = new OpenAI({
    apiKey: gw.tokens.default,
    baseURL: `${gw.url}/v1`,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
  const lines = ["x", "y", "z"].map((id) =>
    JSON.stringify({
      custom_id: id,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "gpt-test", messages: [{ role: "user", content: id }] },
    })
  ).join("\n") + "\n";
  const input = await client.files.create({
    file: await toFile(new TextEncoder().encode(lines), "input.jsonl"),
    purpose: "batch",
  });
  const made = await client.batches.create({
    input_file_id: input.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
  });
  assert.match(made.id, /^batch_/);
  const done = await poll(() => client.batches.retrieve(made.id), (b) => b.status === "completed");
  assert.deepEqual(done.request_counts, { total: 3, completed: 3, failed: 0 });
  assert.ok(done.output_file_id);
  assert.equal(done.error_file_id, null);
  const output = await (await client.files.content(done.output_file_id)).text();
  const answers = Object.fromEntries(
    output.trim().split("\n").map((line) => JSON.parse(line)).map((line) => [
      line.custom_id,
      line.response.body.choices[0].message.content,
    ]),
  );
  assert.deepEqual(answers, { x: "chat: x", y: "chat: y", z: "chat: z" });
  const meta = await client.files.retrieve(done.output_file_id);
  assert.equal(meta.bytes, new TextEncoder().encode(output).length);
  assert.ok((await client.files.list()).data.some((file) => file.id === done.output_file_id), "listed as the owner's");
  assert.equal(upstream.requests.filter((r) => r.path === "/oai/v1/chat/completions").length, 3);
  // Another token: the batch and its output are the provider's 404.
  const stranger = new OpenAI({ apiKey: gw.other, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
  await assert.rejects(stranger.batches.retrieve(made.id), (err) => err instanceof OpenAI.NotFoundError);
  await assert.rejects(stranger.files.content(done.output_file_id), (err) => err instanceof OpenAI.NotFoundError);
});

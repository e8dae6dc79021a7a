/**
 * @module Batches the gateway runs itself: an Anthropic batch whose requests name an OpenAI-compatible model and a
 * Gemini model, each served as the same request sent alone would be (translated, failed over), its results in
 * Anthropic's format; an OpenAI batch onto a chat upstream with its output and error files; cancel; another token's
 * ids; usage and spend per request at the deployment's full price; the token's limits held to.
 */
import assert from "node:assert/strict";
import type { GatewayBatchRunner, IdRecord } from "../../src/core/batch_contract.ts";
import type { Principal } from "../../src/core/principal.ts";
import { chatCompletion, type FakeUpstream, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { GEMINI_KEY, geminiResponder, geminiUpstreamYaml } from "../_gemini_upstream.ts";
import { startGateway, type TestGateway } from "../_helpers.ts";
import { idStore } from "../../src/batches/ids.ts";

type Obj = Record<string, unknown>;

/** The text of a request's last user message, which the fakes echo back. */
function marker(body: Obj | undefined): string {
  const messages = (body?.messages ?? []) as { content: unknown }[];
  const content = messages.at(-1)?.content;
  return typeof content === "string" ? content : JSON.stringify(content);
}

async function gateway(upstream: FakeUpstream, options: { extraGroups?: string; extraYaml?: string } = {}) {
  const gem = geminiUpstreamYaml(upstream.url);
  return await startGateway(upstream.url, {
    extraUpstreams: gem.extraUpstreams,
    extraGroups: `${gem.extraGroups}  - { name: mixed, listing: anthropic, models: [gpt-test, gemini-test] }\n` +
      (options.extraGroups ?? ""),
    extraYaml: options.extraYaml ?? "batches: { poll_ms: 50 }\n",
    env: { TEST_GEMINI_KEY: GEMINI_KEY },
    batches: {},
  });
}

/** A token of `group` and the principal it runs as. */
async function caller(gw: TestGateway, group: string): Promise<Principal> {
  const { record } = await gw.store.createToken({ group });
  const found = await gw.store.getGroup(group);
  assert.ok(found);
  return { token: record, group: found };
}

function runner(gw: TestGateway): GatewayBatchRunner {
  assert.ok(gw.deps.batchRunner);
  return gw.deps.batchRunner;
}

/** The id record of a batch as the routes look it up for its owner. */
async function recordOf(gw: TestGateway, id: string, owner: Principal): Promise<IdRecord> {
  const record = await idStore(gw.store.kv).owned("batch", id, owner.token.id);
  assert.ok(record, `batch ${id} is recorded as its owner's`);
  return record;
}

/** Polls the batch as a client does until `done` holds of it. */
async function pollUntil(
  gw: TestGateway,
  record: IdRecord,
  done: (batch: Obj) => boolean,
): Promise<Obj> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const batch = await runner(gw).retrieve(record, gw.url);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch never got there: ${JSON.stringify(batch)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function linesOf(stream: ReadableStream<Uint8Array>): Promise<Obj[]> {
  const text = await new Response(stream).text();
  assert.ok(text === "" || text.endsWith("\n"), "each line ends in a newline");
  assert.ok(!text.includes("\n\n") && !text.startsWith("\n"), "no blank line");
  return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

Deno.test("an Anthropic batch over an OpenAI-compatible and a Gemini model runs through the gateway, its results Anthropic's", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /oai/v1/chat/completions", (seen) => {
    if (seen.headers.get("authorization") !== "Bearer upstream-openai-key") return jsonReply({ error: "key" }, 401);
    const text = marker(seen.body);
    if (text === "refuse me") {
      return jsonReply({ error: { message: "bad request", type: "invalid_request_error", code: null } }, 400);
    }
    return jsonReply(chatCompletion(`chat says ${text}`));
  });
  upstream.routes.set(
    "POST /gem/v1beta/models/gemini-test:generateContent",
    geminiResponder((body) => ({ parts: [{ text: `gemini says ${JSON.stringify(body.contents)}`.slice(0, 60) }] })),
  );
  await using gw = await gateway(upstream);
  const owner = await caller(gw, "mixed");
  const ask = (model: string, text: string) => ({ model, max_tokens: 64, messages: [{ role: "user", content: text }] });
  const made = await runner(gw).create({
    protocol: "anthropic",
    caller: owner,
    requestId: "req_test",
    requests: [
      { custom_id: "chat-1", endpoint: "/v1/messages", body: ask("gpt-test", "one") },
      { custom_id: "gem-1", endpoint: "/v1/messages", body: ask("gemini-test", "two") },
      { custom_id: "chat-bad", endpoint: "/v1/messages", body: ask("gpt-test", "refuse me") },
    ],
  });
  assert.equal(made.type, "message_batch");
  assert.equal(made.processing_status, "in_progress");
  assert.equal(made.results_url, null);
  assert.deepEqual(made.request_counts, { processing: 3, succeeded: 0, errored: 0, canceled: 0, expired: 0 });
  const record = await recordOf(gw, made.id as string, owner);
  assert.equal(record.upstream, null);
  assert.deepEqual(record.models?.toSorted(), ["gemini-test", "gpt-test"]);
  const ended = await pollUntil(gw, record, (batch) => batch.processing_status === "ended");
  assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 });
  assert.equal(ended.results_url, `${gw.url}/v1/messages/batches/${made.id}/results`);
  const results = new Map((await linesOf(await runner(gw).results(record))).map((line) => [line.custom_id, line]));
  assert.deepEqual([...results.keys()].toSorted(), ["chat-1", "chat-bad", "gem-1"]);
  // Translated back into Anthropic Messages, as /v1/messages answers them.
  const chat = (results.get("chat-1")!.result as Obj).message as Obj;
  assert.equal((results.get("chat-1")!.result as Obj).type, "succeeded");
  assert.equal(chat.type, "message");
  assert.deepEqual(chat.content, [{ type: "text", text: "chat says one" }]);
  const gem = (results.get("gem-1")!.result as Obj).message as Obj;
  assert.equal(gem.type, "message");
  assert.match((gem.content as Obj[])[0].text as string, /^gemini says .*two/);
  const bad = results.get("chat-bad")!.result as Obj;
  assert.equal(bad.type, "errored");
  assert.equal((bad.error as Obj).type, "error");
  assert.equal(((bad.error as Obj).error as Obj).type, "invalid_request_error");
  // Each request reached its upstream once, as it would sent alone.
  assert.equal(upstream.requests.filter((r) => r.path.startsWith("/oai/")).length, 2);
  assert.equal(upstream.requests.filter((r) => r.path.startsWith("/gem/")).length, 1);
  // Another token neither finds it nor reads its results.
  const other = await caller(gw, "mixed");
  assert.equal(await idStore(gw.store.kv).owned("batch", made.id as string, other.token.id), undefined);
  await assert.rejects(runner(gw).retrieve({ ...record, owner: other.token.id }, gw.url), /not found/);
});

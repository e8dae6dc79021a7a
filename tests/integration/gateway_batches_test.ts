/**
 * @module Batches the gateway runs itself: an Anthropic batch whose requests name an OpenAI-compatible model and a
 * Gemini model, each served as the same request sent alone would be (translated, failed over), its results in
 * Anthropic's format; an OpenAI batch onto a chat upstream with its output and error files; cancel; another token's
 * ids.
 */
import assert from "node:assert/strict";
import { idStore } from "../../src/batches/ids.ts";
import { chatCompletion, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { geminiResponder } from "../_gemini_upstream.ts";
import {
  caller,
  gateway,
  heldChat,
  linesOf,
  marker,
  messagesBatch,
  type Obj,
  pollUntil,
  recordOf,
  runner,
} from "../_gateway_batches.ts";

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
  assert.ok(gw.logs.some((line) => line.event === "batch_ended" && line.batch === made.id && line.end === "completed"));
  // Each request reached its upstream once, as it would sent alone.
  assert.equal(upstream.requests.filter((r) => r.path.startsWith("/oai/")).length, 2);
  assert.equal(upstream.requests.filter((r) => r.path.startsWith("/gem/")).length, 1);
  // Another token neither finds it nor reads its results.
  const other = await caller(gw, "mixed");
  assert.equal(await idStore(gw.store.kv).owned("batch", made.id as string, other.token.id), undefined);
  await assert.rejects(runner(gw).retrieve({ ...record, owner: other.token.id }, gw.url), /not found/);
});

Deno.test("an OpenAI batch onto a chat upstream completes with its output and error files, as the owner's", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /oai/v1/chat/completions", (seen) => {
    const text = marker(seen.body);
    if (text === "refuse me") {
      return jsonReply({ error: { message: "bad request", type: "invalid_request_error", code: null } }, 400);
    }
    return jsonReply(chatCompletion(`chat says ${text}`));
  });
  await using gw = await gateway(upstream);
  const owner = await caller(gw, "oa");
  const ask = (text: string) => ({ model: "gpt-test", messages: [{ role: "user", content: text }] });
  const made = await runner(gw).create({
    protocol: "openai",
    caller: owner,
    requestId: "req_test",
    requests: ["one", "two", "refuse me"].map((text, i) => ({
      custom_id: `line-${i}`,
      endpoint: "/v1/chat/completions" as const,
      body: ask(text),
    })),
    openai: {
      input_file_id: "file-input",
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { job: "nightly" },
    },
  });
  assert.equal(made.object, "batch");
  assert.equal(made.status, "in_progress");
  assert.deepEqual(made.metadata, { job: "nightly" });
  assert.equal(made.input_file_id, "file-input");
  const record = await recordOf(gw, made.id as string, owner);
  const done = await pollUntil(gw, record, (batch) => batch.status === "completed");
  assert.deepEqual(done.request_counts, { total: 3, completed: 2, failed: 1 });
  assert.equal(typeof done.completed_at, "number");
  const ids = idStore(gw.store.kv);
  const output = await ids.owned("file", done.output_file_id as string, owner.token.id);
  const errors = await ids.owned("file", done.error_file_id as string, owner.token.id);
  assert.ok(output && errors, "the output and error files are the owner's");
  const outLines = await linesOf(await runner(gw).results(output));
  assert.deepEqual(outLines.map((line) => line.custom_id).toSorted(), ["line-0", "line-1"]);
  for (const line of outLines) {
    const response = line.response as Obj;
    assert.equal(response.status_code, 200);
    assert.equal(((response.body as Obj).choices as Obj[]).length, 1);
    assert.equal(line.error, null);
    assert.match(line.id as string, /^batch_req_/);
  }
  const errLines = await linesOf(await runner(gw).results(errors));
  assert.deepEqual(errLines.map((line) => [line.custom_id, (line.response as Obj).status_code]), [["line-2", 400]]);
  const file = await runner(gw).file!(output);
  assert.equal(file.object, "file");
  assert.equal(file.purpose, "batch_output");
  assert.equal(
    file.bytes,
    new TextEncoder().encode(await new Response(await runner(gw).results(output)).text()).length,
  );
  // Another token's look at the files is a 404.
  const other = await caller(gw, "oa");
  assert.equal(await ids.owned("file", output.id, other.token.id), undefined);
  await assert.rejects(runner(gw).results({ ...output, owner: other.token.id }), /not found/);
});

Deno.test("a canceled batch stops taking requests, lets the one running finish, and ends with the rest canceled", async () => {
  await using upstream = fakeUpstream();
  const held = heldChat(upstream, "chat says");
  await using gw = await gateway(upstream, { extraYaml: "batches: { poll_ms: 50, concurrency: 1 }\n" });
  const owner = await caller(gw, "mixed");
  const { made, record } = await messagesBatch(gw, owner, "gpt-test", ["a", "b", "c"]);
  await held.arrived;
  const canceling = await runner(gw).cancel(record, gw.url);
  assert.equal(canceling.processing_status, "canceling");
  assert.equal(typeof canceling.cancel_initiated_at, "string");
  await assert.rejects(runner(gw).results(record), /still canceling/);
  await assert.rejects(runner(gw).delete(record), /cannot be deleted while it is canceling/);
  held.release();
  const ended = await pollUntil(gw, record, (batch) => batch.processing_status === "ended");
  assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 1, errored: 0, canceled: 2, expired: 0 });
  const lines = await linesOf(await runner(gw).results(record));
  assert.deepEqual(lines.map((line) => [line.custom_id, (line.result as Obj).type]), [
    ["a", "succeeded"],
    ["b", "canceled"],
    ["c", "canceled"],
  ]);
  assert.equal(upstream.requests.length, 1, "no request was started after the cancel");
  // Once ended it may be deleted, and is then gone.
  assert.deepEqual(await runner(gw).delete(record), { id: made.id, type: "message_batch_deleted" });
  await assert.rejects(runner(gw).retrieve(record, gw.url), /not found/);
});

Deno.test("a gateway-run batch refuses an endpoint it cannot serve, naming the field, and makes nothing", async () => {
  await using upstream = fakeUpstream();
  await using gw = await gateway(upstream);
  const owner = await caller(gw, "oa");
  await assert.rejects(
    runner(gw).create({
      protocol: "openai",
      caller: owner,
      requestId: "req_test",
      requests: [{ custom_id: "e", endpoint: "/v1/embeddings", body: { model: "gpt-test", input: "hi" } }],
    }),
    (err: Error & { param?: string; status?: number }) => err.param === "endpoint" && err.status === 400,
  );
  assert.deepEqual(await idStore(gw.store.kv).listOwned("batch", "openai", owner.token.id), []);
  assert.deepEqual(await Array.fromAsync(gw.store.kv.list({ prefix: ["gbatch"] })), []);
});

Deno.test("a token revoked while its batch runs gets its remaining requests answered as that token would be", async () => {
  await using upstream = fakeUpstream();
  const held = heldChat(upstream, "chat says");
  let at = Date.UTC(2026, 0, 5, 10, 0, 30);
  await using gw = await gateway(upstream, {
    now: () => new Date(at),
    extraYaml: "batches: { poll_ms: 50, concurrency: 1, lease_ms: 600000 }\n",
  });
  const owner = await caller(gw, "mixed");
  const { record } = await messagesBatch(gw, owner, "gpt-test", ["a", "b"]);
  await held.arrived;
  await gw.store.revokeToken(owner.token.id);
  // Past the token cache's refresh, as a request with the token would be.
  at += 1000;
  held.release();
  await pollUntil(gw, record, (batch) => batch.processing_status === "ended");
  const lines = await linesOf(await runner(gw).results(record));
  const byId = Object.fromEntries(lines.map((line) => [line.custom_id, line.result as Obj]));
  assert.equal(byId.a.type, "succeeded");
  assert.equal(byId.b.type, "errored");
  assert.equal(((byId.b.error as Obj).error as Obj).type, "authentication_error");
  assert.equal(upstream.requests.length, 1);
});

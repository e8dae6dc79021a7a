/** @module Usage accounting over real HTTP: the request log and the daily aggregates, streamed and not, both protocols. */
import assert from "node:assert/strict";
import { requestLog, usageTotals } from "../../src/usage/query.ts";
import { usageKey } from "../../src/usage/log_entry.ts";
import { chatCompletion, controlledStream, fakeUpstream, hang, jsonReply, sseReply } from "../_fake_upstream.ts";
import {
  anthropicMessage,
  bodyReader,
  firstEvent,
  fixture,
  leaveWhileUpstreamWaits,
  messagesBody,
  readSse,
  readText,
  startGateway,
  waitFor,
  within,
} from "../_helpers.ts";
import type { BodyReader } from "../_reads.ts";

const today = () => new Date().toISOString().slice(0, 10);

/** A chat completion with the usage the OpenAI test below expects. */
const CHAT_COMPLETION = {
  ...chatCompletion(),
  usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16, prompt_tokens_details: { cached_tokens: 2 } },
};

const CHAT_STREAM = [
  { choices: [{ index: 0, delta: { role: "assistant", content: "Hel" }, finish_reason: null }] },
  { choices: [{ index: 0, delta: { content: "lo" }, finish_reason: "stop" }] },
  { choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } },
].map((chunk) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", ...chunk })}\n\n`).join("") +
  "data: [DONE]\n\n";

Deno.test("a non-streamed message is logged with its usage and session, without any text", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage("A secret reply")));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post(
    "/v1/messages",
    messagesBody({ messages: [{ role: "user", content: "A secret prompt" }] }),
    {
      "x-claude-code-session-id": "sess-1",
    },
  );
  assert.equal(res.status, 200);
  await res.body?.cancel();
  await gw.flush();
  const [entry, ...rest] = await requestLog(gw.store.kv, { limit: 10 });
  assert.equal(rest.length, 0);
  const tokenId = (await gw.store.listTokens()).find((t) => t.group === "default")!.id;
  assert.equal(entry.token_id, tokenId);
  assert.equal(entry.group, "default");
  assert.equal(entry.model, "claude-test");
  assert.equal(entry.upstream, "anth");
  assert.equal(entry.protocol, "anthropic");
  assert.equal(entry.status, 200);
  assert.equal(entry.stream, false);
  assert.equal(entry.session_id, "sess-1");
  assert.equal(entry.input_tokens, 5);
  assert.equal(entry.output_tokens, 2);
  assert.equal(entry.usage_complete, true);
  assert.equal(typeof entry.duration_ms, "number");
  assert.ok(!JSON.stringify(entry).includes("secret"), "the log holds prompt or completion text");
  const [byToken] = await usageTotals(gw.store.kv, { by: "token", since: today(), until: today() });
  assert.deepEqual({ key: byToken.key, requests: byToken.requests, total: byToken.total_tokens }, {
    key: tokenId,
    requests: 1,
    total: 7,
  });
  const [bySession] = await usageTotals(gw.store.kv, { by: "session", since: today(), until: today() });
  assert.equal(bySession.key, "sess-1");
  assert.equal(bySession.output_tokens, 2);
});

Deno.test("a streamed message is logged with the usage read from its events", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic_text.sse")));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody({ stream: true }));
  assert.equal((await readSse(res)).at(-1)?.event, "message_stop");
  await gw.flush();
  const [entry] = await requestLog(gw.store.kv, { limit: 10 });
  assert.deepEqual([entry.stream, entry.input_tokens, entry.output_tokens, entry.usage_complete], [true, 9, 3, true]);
  assert.equal(typeof entry.ttfb_ms, "number");
});

Deno.test("OpenAI chat usage is recorded from a body and from a stream's usage chunk", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    (seen) => seen.body?.stream ? sseReply(CHAT_STREAM) : jsonReply(CHAT_COMPLETION),
  );
  await using gw = await startGateway(upstream.url);
  const chat = { model: "gpt-test", messages: [{ role: "user", content: "Hi" }] };
  const headers = { "x-api-key": "", authorization: `Bearer ${gw.tokens.oa}` };
  const plain = await gw.post("/v1/chat/completions", chat, headers);
  assert.equal(plain.status, 200);
  await plain.body?.cancel();
  const streamed = await gw.post("/v1/chat/completions", { ...chat, stream: true }, headers);
  assert.equal((await readSse(streamed)).at(-1)?.data, "[DONE]");
  await gw.flush();
  const [second, first] = await requestLog(gw.store.kv, { limit: 10 });
  assert.deepEqual(
    [first.protocol, first.stream, first.input_tokens, first.cache_read_input_tokens, first.output_tokens],
    ["openai-chat", false, 10, 2, 4],
  );
  assert.deepEqual([second.stream, second.input_tokens, second.output_tokens, second.usage_complete], [
    true,
    7,
    3,
    true,
  ]);
  const [byModel] = await usageTotals(gw.store.kv, { by: "model", since: today(), until: today() });
  assert.deepEqual([byModel.key, byModel.requests, byModel.total_tokens], ["gpt-test", 2, 26]);
});

/** Usage from a compatible server that reports cache writes beside the reads, both part of `prompt_tokens`. */
const CACHED_USAGE = {
  prompt_tokens: 20,
  completion_tokens: 4,
  total_tokens: 24,
  prompt_tokens_details: { cached_tokens: 6, cache_creation_tokens: 5 },
};

Deno.test("what is recorded of a chat upstream's cache usage is what a Messages client is shown", async () => {
  await using upstream = fakeUpstream();
  const chunks = [
    { choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: "stop" }] },
    { choices: [], usage: CACHED_USAGE },
  ];
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    (seen) =>
      seen.body?.stream
        ? sseReply(
          chunks.map((chunk) => `data: ${JSON.stringify({ id: "c1", ...chunk })}\n\n`).join("") + "data: [DONE]\n\n",
        )
        : jsonReply({ ...chatCompletion(), usage: CACHED_USAGE }),
  );
  await using gw = await startGateway(upstream.url);
  const shown = { input_tokens: 9, output_tokens: 4, cache_read_input_tokens: 6, cache_creation_input_tokens: 5 };
  const whole = await (await gw.post("/v1/messages", messagesBody({ model: "gpt-test" }))).json();
  assert.deepEqual(whole.usage, shown);
  const events = await readSse(await gw.post("/v1/messages", messagesBody({ model: "gpt-test", stream: true })));
  const delta = events.find((e) => e.event === "message_delta")!;
  assert.deepEqual(JSON.parse(delta.data).usage, shown);
  assert.deepEqual(gw.exchanges.map((exchange) => exchange.usage), [shown, shown]);
});

/** Two ways a stream that began ends early: its upstream breaks, or its client leaves. */
const EARLY_ENDS = [
  {
    name: "a cut stream is recorded with what was seen and marked incomplete, and as an error",
    error: "upstream",
    errors: 1,
    async end(stream: ReturnType<typeof controlledStream>, body: BodyReader) {
      stream.cut();
      assert.match(await body.rest(), /event: error\n/);
    },
  },
  {
    name: "a stream its client leaves is recorded with what was seen and marked incomplete, not as an error",
    error: null,
    errors: 0,
    end: (_stream: ReturnType<typeof controlledStream>, body: BodyReader) => body.cancel(),
  },
];

for (const c of EARLY_ENDS) {
  Deno.test(c.name, async () => {
    await using upstream = fakeUpstream();
    const stream = controlledStream();
    upstream.routes.set("POST /anth/v1/messages", () => stream.response);
    await using gw = await startGateway(upstream.url);
    const pending = gw.post("/v1/messages", messagesBody({ stream: true }));
    stream.send(firstEvent(fixture("anthropic_text.sse")));
    await using body = bodyReader(await pending);
    // The stream ends early only once the client holds message_start, so the gateway has surely seen its usage.
    await body.until((read) => read.includes("message_start"));
    await c.end(stream, body);
    await within(upstream.requests[0].closed, 2000, "the upstream request closing");
    await waitFor(() => gw.exchanges[0]);
    await gw.flush();
    const [entry] = await requestLog(gw.store.kv, { limit: 10 });
    assert.deepEqual([entry.status, entry.input_tokens, entry.usage_complete, entry.error], [200, 9, false, c.error]);
    const [byGroup] = await usageTotals(gw.store.kv, { by: "group", since: today(), until: today() });
    assert.deepEqual([byGroup.requests, byGroup.incomplete, byGroup.errors], [1, 1, c.errors]);
  });
}

Deno.test("a request its client closed before the answer is logged as 499 and counted, but not as an error", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", hang);
  await using gw = await startGateway(upstream.url);
  await leaveWhileUpstreamWaits(gw, upstream);
  await within(upstream.requests[0].closed, 2000, "the upstream request closing");
  await waitFor(() => gw.exchanges[0]);
  await gw.flush();
  const [entry] = await requestLog(gw.store.kv, { limit: 10 });
  assert.deepEqual([entry.status, entry.error], [499, "client_closed"]);
  const [byToken] = await usageTotals(gw.store.kv, { by: "token", since: today(), until: today() });
  assert.deepEqual([byToken.requests, byToken.errors], [1, 0]);
});

Deno.test("a request that failed upstream is logged with usage_complete false and counted as an error", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply({ type: "error", error: { type: "api_error" } }, 500));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 500);
  await res.body?.cancel();
  await gw.flush();
  const [entry] = await requestLog(gw.store.kv, { limit: 10 });
  assert.deepEqual([entry.status, entry.usage_complete, entry.error], [500, false, "upstream"]);
  const [byToken] = await usageTotals(gw.store.kv, { by: "token", since: today(), until: today() });
  assert.deepEqual([byToken.requests, byToken.incomplete, byToken.errors], [1, 0, 1]);
});

Deno.test("usage is batched off the request path and written by the timer", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { flushMs: 50 });
  const res = await gw.post("/v1/messages", messagesBody());
  await res.body?.cancel();
  const key = usageKey("model", today(), "claude-test", "requests");
  assert.equal((await gw.store.kv.get(key)).value, null, "usage was written on the request path");
  const watch = gw.store.kv.watch<[Deno.KvU64]>([key]).getReader();
  try {
    for (;;) {
      const { value } = await within(watch.read(), 15_000, "the usage write");
      if (value?.[0].value) {
        assert.equal(value[0].value.value, 1n);
        break;
      }
    }
  } finally {
    await watch.cancel();
  }
});

Deno.test("usage batched at shutdown is written before the gateway closes", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  const kv = await Deno.openKv(":memory:");
  try {
    {
      await using gw = await startGateway(upstream.url, { kv });
      await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
    }
    const [row] = await usageTotals(kv, { by: "day", since: today(), until: today() });
    assert.deepEqual([row.key, row.requests, row.total_tokens], [today(), 1, 7]);
  } finally {
    kv.close();
  }
});

Deno.test("requests that never reach a model by a token are not recorded", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  await (await gw.post("/v1/messages", messagesBody(), { "x-api-key": "sk-unknown" })).body?.cancel();
  await (await fetch(`${gw.url}/v1/models`, { headers: { "x-api-key": gw.tokens.default } })).body?.cancel();
  await gw.flush();
  assert.deepEqual(await requestLog(gw.store.kv, { limit: 10 }), []);
});

Deno.test("a request for a model the group does not enable is recorded without it and cannot spoil a batch", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  await (await gw.post("/v1/messages", messagesBody())).body?.cancel();
  // A model id far longer than a KV key may be used to fail the whole write it joins.
  const res = await gw.post("/v1/messages", messagesBody({ model: "x".repeat(5000) }));
  assert.equal(res.status, 404);
  await res.body?.cancel();
  await gw.flush();
  const log = await requestLog(gw.store.kv, { limit: 10 });
  assert.deepEqual(log.map((e) => [e.model, e.status]), [[null, 404], ["claude-test", 200]]);
  const [byModel, ...others] = await usageTotals(gw.store.kv, { by: "model", since: today(), until: today() });
  assert.equal(byModel.key, "claude-test");
  assert.equal(others.length, 0);
});

Deno.test("a session id shaped like a token is not recorded", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const token = gw.tokens.default;
  await (await gw.post("/v1/messages", messagesBody(), { "x-claude-code-session-id": token })).body?.cancel();
  await gw.flush();
  const [entry] = await requestLog(gw.store.kv, { limit: 10 });
  assert.equal(entry.session_id ?? null, null);
  assert.ok(
    !JSON.stringify(await usageTotals(gw.store.kv, { by: "session", since: today(), until: today() })).includes(token),
  );
});

Deno.test("a request refused before any upstream is recorded too: a failed body check, a model outside the group", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const refusals = [
    { body: messagesBody({ max_tokens: undefined }), status: 400, model: "claude-test" },
    { body: messagesBody({ model: "gpt-ha" }), status: 404, model: null },
    { body: '{"model": "claude-test",', status: 400, model: null },
  ];
  for (const refusal of refusals) {
    const res = await gw.post("/v1/messages", refusal.body);
    assert.equal(res.status, refusal.status);
    await res.body?.cancel();
  }
  assert.equal(upstream.requests.length, 0);
  await gw.flush();
  const log = await requestLog(gw.store.kv, { limit: 10 });
  // Entries of one millisecond are ordered by request id, so the log's order is not the order they were sent in.
  const byStatusAndModel = (a: { status: number; model: string | null }, b: { status: number; model: string | null }) =>
    a.status - b.status || String(a.model).localeCompare(String(b.model));
  assert.deepEqual(
    log.map((e) => ({ status: e.status, model: e.model })).sort(byStatusAndModel),
    refusals.map(({ status, model }) => ({ status, model })).sort(byStatusAndModel),
  );
  // The client's own words for a model its group does not enable are not kept: they may hold anything.
  assert.ok(!JSON.stringify(log).includes("gpt-ha"));
  const [byToken] = await usageTotals(gw.store.kv, { by: "token", since: today(), until: today() });
  assert.deepEqual([byToken.requests, byToken.errors], [3, 3]);
  const byModel = await usageTotals(gw.store.kv, { by: "model", since: today(), until: today() });
  assert.deepEqual(byModel.map((row) => [row.key, row.requests]), [["claude-test", 1]]);
  const metrics = await readText(await fetch(`${gw.url}/metrics`));
  assert.match(metrics, /modelgate_requests_total\{route="\/v1\/messages",status="400",model="claude-test"/);
});

Deno.test("a Gemini client's generation is logged with its usage, and its token count is not", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage("A reply")));
  upstream.routes.set("POST /anth/v1/messages/count_tokens", () => jsonReply({ input_tokens: 5 }));
  await using gw = await startGateway(upstream.url);
  const ask = { contents: [{ role: "user", parts: [{ text: "A secret prompt" }] }] };
  const headers = { "x-goog-api-key": gw.tokens.default };
  for (const action of ["generateContent", "countTokens"]) {
    const res = await fetch(`${gw.url}/v1beta/models/claude-test:${action}`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify(ask),
    });
    assert.equal(res.status, 200, action);
    await res.body?.cancel();
  }
  await gw.flush();
  const entries = await requestLog(gw.store.kv, { limit: 10 });
  assert.deepEqual(entries.map((entry) => [entry.route, entry.protocol, entry.model]), [
    ["/v1beta/models/:id:generateContent", "gemini", "claude-test"],
  ]);
  assert.ok(entries[0].input_tokens > 0);
  assert.doesNotMatch(JSON.stringify(entries), /secret prompt/);
  const [row] = await usageTotals(gw.store.kv, { by: "model", since: today(), until: today(), name: "claude-test" });
  assert.equal(row.requests, 1);
});

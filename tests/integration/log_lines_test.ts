/**
 * @module Log lines that tell an operator what happened: the client's own protocol, one event name for a translation's
 * dropped fields, a client that left as the client's cancellation (never a 5xx), and the upstream's request id.
 */
import assert from "node:assert/strict";
import { fakeUpstream, hang, jsonReply, sseReply } from "../_fake_upstream.ts";
import {
  leaveWhileUpstreamWaits,
  messagesBody,
  readText,
  startGateway,
  type TestGateway,
  waitFor,
} from "../_helpers.ts";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";

function requestLine(gw: TestGateway): Record<string, unknown> {
  const lines = gw.logs.filter((line) => line.event === "request");
  assert.equal(lines.length, 1);
  return lines[0];
}

/** The metrics page's request counts by status, and its error and failure counts. */
async function counted(gw: TestGateway) {
  const res = await fetch(`${gw.url}/metrics`);
  const page = parsePrometheusText(await readText(res));
  const samples = (name: string) => page.get(name)?.samples ?? [];
  return {
    statuses: samples("modelgate_requests_total").map((s) => s.labels.status),
    errors: samples("modelgate_request_errors_total").map((s) => s.labels.kind),
    failures: samples("modelgate_upstream_failures_total").map((s) => s.labels.kind),
    with499: sampleValue(page, "modelgate_requests_total", { route: "/v1/messages", status: "499" }),
  };
}

/** Asserts the one rule for a client that left: 499, client_closed, info, no internal error, no 5xx, no error count. */
async function assertClientClosed(gw: TestGateway): Promise<void> {
  const exchange = await waitFor(() => gw.exchanges.at(-1));
  assert.equal(exchange.status, 499);
  assert.equal(exchange.error, "client_closed");
  const line = requestLine(gw);
  assert.deepEqual([line.level, line.status, line.error], ["info", 499, "client_closed"]);
  assert.ok(!gw.logs.some((l) => l.event === "internal_error"), "logged as an internal error");
  const metrics = await counted(gw);
  assert.ok(metrics.statuses.every((status) => !status.startsWith("5")), `a 5xx was counted: ${metrics.statuses}`);
  assert.equal(metrics.with499, 1);
  assert.deepEqual([metrics.errors, metrics.failures], [[], []]);
}

Deno.test("a Responses request is logged under the Responses protocol", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /oai/v1/chat/completions", () =>
    jsonReply({
      id: "c1",
      choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }],
    }));
  await using gw = await startGateway(upstream.url);
  const res = await gw.post("/v1/responses", { model: "gpt-test", input: "Hello" }, { "x-api-key": gw.tokens.oa });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  assert.equal(requestLine(gw).protocol, "openai-responses");
});

Deno.test("every field a translation drops is logged under the one event name translate_drop", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    () => jsonReply({ id: "c1", choices: [{ index: 0, message: { role: "assistant", content: "Hi" } }] }),
  );
  await using gw = await startGateway(upstream.url);
  // Thinking for an upstream without reasoning_effort, and a server tool: two different places that drop.
  const res = await gw.post("/v1/messages", {
    ...messagesBody({ model: "gpt-test" }),
    thinking: { type: "enabled", budget_tokens: 2048 },
    tools: [{ type: "web_search_20250305", name: "web_search" }],
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const notes = gw.logs.filter((line) => line.event !== "request");
  assert.deepEqual(notes.map((line) => [line.event, line.field]).sort(), [
    ["translate_drop", "thinking"],
    ["translate_drop", "tools"],
  ]);
});

Deno.test("a client that leaves before any answer is logged as its own cancellation, not a 503", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", hang);
  await using gw = await startGateway(upstream.url);
  await leaveWhileUpstreamWaits(gw, upstream);
  await assertClientClosed(gw);
  assert.deepEqual(gw.exchanges[0].attempts.map((a) => a.outcome), ["client_closed"]);
});

for (const upload of ["with a content-length", "chunked"]) {
  Deno.test(`a client that leaves mid-upload (${upload}) is logged as its own cancellation, never internal`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url);
    const port = Number(new URL(gw.url).port);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    const framing = upload === "chunked" ? "transfer-encoding: chunked\r\n\r\n8\r\n" : "content-length: 1000\r\n\r\n";
    const head = `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${gw.tokens.default}\r\n` +
      `content-type: application/json\r\n${framing}{"model"`;
    await conn.write(new TextEncoder().encode(head));
    // The request is the gateway's (its handler runs, and reads the body) when the connection goes.
    await waitFor(() => gw.started[0]);
    conn.close();
    await assertClientClosed(gw);
    assert.equal(upstream.requests.length, 0);
  });
}

Deno.test("the upstream's own request id is in the log line, beside the gateway's in x-request-id", async () => {
  await using upstream = fakeUpstream();
  const overloaded = {
    type: "error",
    error: { type: "overloaded_error", message: "Overloaded" },
    request_id: "req_up_1",
  };
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(overloaded, 529, { "request-id": "req_up_1" }));
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    () => sseReply('data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'),
  );
  await using gw = await startGateway(upstream.url, { routing: "max_attempts: 1" });
  const res = await gw.post("/v1/messages", messagesBody());
  assert.equal(res.status, 529);
  assert.equal((await res.json()).request_id, "req_up_1", "the passthrough body keeps the upstream's id");
  const ours = res.headers.get("x-request-id");
  assert.notEqual(ours, "req_up_1");
  const line = requestLine(gw);
  assert.equal(line.request_id, ours);
  assert.deepEqual(line.attempts, [{ upstream: "anth", outcome: "overloaded", status: 529, request_id: "req_up_1" }]);
});

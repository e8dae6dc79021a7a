/**
 * @module An upstream's non-streamed answer is taken only up to its `max_answer_bytes`: past it, with a Content-Length
 * that says so or without one, the client gets a 502 naming the limit, the upstream's body is let go at once, and the
 * request is not sent again; an answer at the limit, and a stream of any size, are served; and a large answer comes
 * out whole, passed through or translated.
 */
import assert from "node:assert/strict";
import { type FakeUpstream, fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, readText, startGateway, type TestGateway, within } from "../_helpers.ts";
import { parseConfig } from "../../src/core/config_load.ts";

const LIMIT = 64 * 1024;
/** Retries to the same deployment allowed, so a test sees that none is made. */
const ROUTING = "max_attempts: 3, retry_budget: { ratio: 1, min_retries: 100 }";

/** An Anthropic message of `bytes` bytes in all, its text filled with `x`. */
function messageOf(bytes: number): string {
  const empty = JSON.stringify(anthropicMessage(""));
  return JSON.stringify(anthropicMessage("x".repeat(bytes - empty.length)));
}

/** Answers with `text`, with its Content-Length, or in pieces without one (chunked). */
function answer(upstream: FakeUpstream, text: string, chunked: boolean): void {
  upstream.routes.set("POST /anth/v1/messages", () => {
    const bytes = new TextEncoder().encode(text);
    const body = chunked
      ? ReadableStream.from(
        Array.from({ length: Math.ceil(bytes.length / 4096) }, (_, i) => bytes.subarray(i * 4096, (i + 1) * 4096)),
      )
      : bytes;
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
}

/** A Messages request (passed through) or a Chat Completions one (translated) for the Anthropic model. */
function ask(gw: TestGateway, translated: boolean, stream = false): Promise<Response> {
  return translated
    ? gw.post("/v1/chat/completions", { model: "claude-test", stream, messages: [{ role: "user", content: "Hi" }] })
    : gw.post("/v1/messages", messagesBody({ stream }));
}

for (const chunked of [false, true]) {
  for (const translated of [false, true]) {
    const how = `${translated ? "translated" : "passed through"}, ${chunked ? "without" : "with"} a Content-Length`;
    Deno.test(`an answer past max_answer_bytes is a 502 naming the limit, and is not asked again (${how})`, async () => {
      await using upstream = fakeUpstream();
      await using gw = await startGateway(upstream.url, { maxAnswerBytes: LIMIT, routing: ROUTING });
      answer(upstream, messageOf(LIMIT + 1), chunked);
      const res = await ask(gw, translated);
      const text = await readText(res);
      assert.equal(res.status, 502, text);
      assert.match(
        text,
        /Upstream \\?"anth\\?" answered with a body larger than its limit of 65536 bytes \(max_answer_bytes\)/,
      );
      assert.equal(upstream.requests.length, 1, "the same answer is not asked for again");
      await within(upstream.requests[0].closed, 2000, "the upstream's body let go");
      assert.equal(gw.exchanges[0].attempts.length, 1);

      answer(upstream, messageOf(LIMIT), chunked);
      const served = await ask(gw, translated);
      const body = await served.json();
      assert.equal(served.status, 200, JSON.stringify(body).slice(0, 200));
      const content = translated ? body.choices[0].message.content : body.content[0].text;
      assert.equal(content, "x".repeat(LIMIT - JSON.stringify(anthropicMessage("")).length), "the whole answer");
    });
  }
}

Deno.test("a stream larger than max_answer_bytes is served: the limit is for whole answers", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { maxAnswerBytes: LIMIT });
  const delta = (text: string) =>
    `event: content_block_delta\ndata: ${
      JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })
    }\n\n`;
  const events = [
    `event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: anthropicMessage("") })}\n\n`,
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    ...Array.from({ length: 40 }, () => delta("y".repeat(4096))),
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ];
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => new Response(events.join(""), { headers: { "content-type": "text/event-stream" } }),
  );
  const res = await ask(gw, false, true);
  const text = await readText(res);
  assert.equal(res.status, 200);
  assert.ok(text.length > LIMIT * 2 && text.includes("event: message_stop"));
});

Deno.test("a large answer's error body is held to the limit too, and a small one still passes", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { maxAnswerBytes: LIMIT });
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => jsonReply({ type: "error", error: { type: "invalid_request_error", message: "z".repeat(LIMIT) } }, 400),
  );
  const res = await ask(gw, false);
  assert.equal(res.status, 502, await readText(res));
  upstream.routes.set(
    "POST /anth/v1/messages",
    () => jsonReply({ type: "error", error: { type: "invalid_request_error", message: "too long" } }, 400),
  );
  const small = await ask(gw, false);
  assert.equal(small.status, 400);
  assert.equal((await small.json()).error.message, "too long");
});

Deno.test("max_answer_bytes is 32 MiB unless an upstream says otherwise, and at least 1 KiB", () => {
  const yaml = (extra: string) =>
    `upstreams:
  - { name: a, protocol: anthropic, base_url: "https://api.example.test/v1", api_key_env: KEY, models: [m]${extra} }
groups:
  - { name: default, listing: anthropic, models: [m] }
`;
  assert.equal(parseConfig(yaml(""), "a.yaml").upstreams[0].max_answer_bytes, 32 * 1024 * 1024);
  assert.equal(parseConfig(yaml(", max_answer_bytes: 4096"), "a.yaml").upstreams[0].max_answer_bytes, 4096);
  assert.throws(() => parseConfig(yaml(", max_answer_bytes: 10"), "a.yaml"), /max_answer_bytes/);
});

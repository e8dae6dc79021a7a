/**
 * @module An upstream that quotes the key it was sent never gets it to the client, on any byte path: an error body
 * that names it twice, a successful answer, a stream whose first event is the error, an error event in the middle of
 * a stream (passed through or translated), and a key split across two of the upstream's chunks.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, jsonReply, type SeenRequest, sseReply } from "../_fake_upstream.ts";
import {
  anthropicMessage,
  bodyReader,
  messagesBody,
  readText,
  startGateway,
  type TestGateway,
  UPSTREAM_KEYS,
} from "../_helpers.ts";

const KEY = UPSTREAM_KEYS.TEST_ANTHROPIC_KEY;
const START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",' +
  '"role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,' +
  '"usage":{"input_tokens":5,"output_tokens":1}}}\n\n';
const CHAT = { model: "claude-test", messages: [{ role: "user", content: "Hi" }] };

/** The key the gateway sent, as the upstream saw it. */
function sentKey(seen: SeenRequest): string {
  return seen.headers.get("x-api-key") ?? "";
}

/** An Anthropic error event whose message quotes `key`. */
function errorEvent(key: string): string {
  return `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"bad key ${key}"}}\n\n`;
}

/** What a Messages client and a chat client (translated from the same Anthropic upstream) receive. */
async function bothClients(gw: TestGateway, stream: boolean): Promise<{ status: number; text: string }[]> {
  const messages = await gw.post("/v1/messages", messagesBody({ stream }));
  const chat = await gw.post("/v1/chat/completions", { ...CHAT, stream }, { "x-api-key": gw.tokens.oa });
  return [
    { status: messages.status, text: await readText(messages) },
    { status: chat.status, text: await readText(chat) },
  ];
}

Deno.test("an upstream key named twice in an error body is redacted both times", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", (seen) =>
    jsonReply({
      type: "error",
      error: { type: "invalid_request_error", message: `key ${sentKey(seen)} is not ${sentKey(seen)}` },
    }, 400));
  await using gw = await startGateway(upstream.url);
  for (const { status, text } of await bothClients(gw, false)) {
    assert.equal(status, 400);
    assert.ok(!text.includes(KEY), `the key reached the client: ${text}`);
    assert.match(text, /key \[redacted\] is not \[redacted\]/);
  }
});

Deno.test("an upstream key in a successful JSON answer is redacted, passed through and translated", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", (seen) => jsonReply(anthropicMessage(`your key is ${sentKey(seen)}`)));
  await using gw = await startGateway(upstream.url);
  for (const { status, text } of await bothClients(gw, false)) {
    assert.equal(status, 200);
    assert.ok(!text.includes(KEY), `the key reached the client: ${text}`);
    assert.match(text, /your key is \[redacted\]/);
  }
});

/** Streams that quote the key: before the client has anything (a failed attempt), and after it has its first event. */
const STREAMS = [
  { name: "a stream's first event, an error,", body: errorEvent, status: 502 },
  {
    name: "a mid-stream error event, passed through and translated,",
    body: (key: string) => START + errorEvent(key),
    status: 200,
  },
];
for (const c of STREAMS) {
  Deno.test(`an upstream key in ${c.name} is redacted`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /anth/v1/messages", (seen) => sseReply(c.body(sentKey(seen))));
    await using gw = await startGateway(upstream.url);
    for (const { status, text } of await bothClients(gw, true)) {
      assert.equal(status, c.status);
      assert.ok(!text.includes(KEY), `the key reached the client: ${text}`);
      assert.match(text, /bad key \[redacted\]/);
    }
  });
}

Deno.test("an upstream key split across two of the upstream's chunks is redacted", async () => {
  await using upstream = fakeUpstream();
  const stream = controlledStream();
  const seenKey = Promise.withResolvers<string>();
  upstream.routes.set("POST /anth/v1/messages", (seen) => {
    seenKey.resolve(sentKey(seen));
    return stream.response;
  });
  await using gw = await startGateway(upstream.url);
  const answer = gw.post("/v1/messages", messagesBody({ stream: true }));
  const key = await seenKey.promise;
  const [head, tail] = [key.slice(0, 9), key.slice(9)];
  stream.send(START + errorEvent(head).slice(0, -"\n\n".length - head.length - '"}}'.length) + head);
  const res = await answer;
  assert.equal(res.status, 200);
  await using body = bodyReader(res);
  // Everything before the key's first part has reached the client, so the gateway has read that chunk on its own.
  let text = await body.until((got) => got.includes("bad key "));
  stream.send(errorEvent(tail).slice("event: error\ndata: ".length).replace(/^.*bad key /, ""));
  stream.end();
  text += await body.rest();
  assert.ok(!text.includes(key), `the key reached the client: ${text}`);
  assert.ok(!text.includes(head), `the key's first part reached the client: ${text}`);
  assert.match(text, /"message":"bad key \[redacted\]"\}\}\n\n$/);
});

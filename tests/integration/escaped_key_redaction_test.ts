/**
 * @module An upstream that hides its key from a plain search never gets it to a client through the gateway: a key
 * written with JSON escapes (`\u0073k-...`, `\/`) that the gateway decodes and writes again in plain text, and a key
 * spread over several text deltas or tool-argument fragments that the gateway puts back together (the Responses
 * `.done` events and `response.completed`, a stored response, a Gemini function call's arguments, the socket's
 * events). Each client protocol, streamed and not, from an Anthropic upstream and, for an Anthropic client, from a
 * chat upstream; and a stream passed through as the upstream sent it, cut into small chunks, redacted as a whole
 * answer is.
 */
import assert from "node:assert/strict";
import { decodedTexts } from "../_decoded.ts";
import { type FakeUpstream, fakeUpstream } from "../_fake_upstream.ts";
import { readText, startGateway, type TestGateway } from "../_helpers.ts";
import { create, openSocket } from "../_socket.ts";

/** Keys with a slash, which some JSON encoders escape as `\/`. */
const KEY = "sk-ant/api03+Zq7vN2mK9pL4wR8t";
const CHAT_KEY = "sk-proj/Xy12+ab34cd56ef78gh";
const KEYS = [KEY, CHAT_KEY];

/** A key as JSON string content: plain, its first letter escaped, every character escaped, its slashes escaped. */
const ENCODINGS: Record<string, (key: string) => string> = {
  "its first letter as \\u": (key) => `\\u${hex(key[0])}${key.slice(1)}`,
  "every character as \\u": (key) => [...key].map((c) => `\\u${hex(c).toUpperCase()}`).join(""),
  "its slashes as \\/": (key) => key.replaceAll("/", "\\/"),
};
function hex(c: string): string {
  return c.charCodeAt(0).toString(16).padStart(4, "0");
}

/** Fails when one JSON body, one SSE event, or one socket message holds a key whole, as sent or once decoded. */
function assertNoKey(text: string, where: string): void {
  const pieces = text.startsWith("{") || text.startsWith("[")
    ? [text]
    : text.split(/\r?\n\r?\n/).map((event) =>
      event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).join("\n")
    );
  for (const piece of pieces) {
    if (piece.trim() === "") continue;
    for (const key of KEYS) {
      const found = decodedTexts(piece).find((t) => t.includes(key));
      assert.equal(found, undefined, `${where}: a key reached the client whole in ${piece}`);
    }
  }
}

/** Anthropic stream events: a text block of `texts` deltas, then a tool call whose input comes in `args` fragments. */
function anthropicStream(textDeltas: string[], argFragments: string[] = []): string {
  const event = (type: string, data: string) => `event: ${type}\ndata: ${data}\n\n`;
  let out = event(
    "message_start",
    '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",' +
      '"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}',
  );
  /** One content block: its start, a delta per raw piece (JSON string content), its stop. */
  const block = (index: number, start: string, delta: string, raws: string[]) => {
    out += event("content_block_start", `{"type":"content_block_start","index":${index},"content_block":${start}}`);
    for (const raw of raws) {
      out += event("content_block_delta", `{"type":"content_block_delta","index":${index},"delta":${delta}"${raw}"}}`);
    }
    out += event("content_block_stop", `{"type":"content_block_stop","index":${index}}`);
  };
  block(0, '{"type":"text","text":""}', '{"type":"text_delta","text":', textDeltas);
  if (argFragments.length > 0) {
    const tool = '{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}';
    block(1, tool, '{"type":"input_json_delta","partial_json":', argFragments);
  }
  const stop = argFragments.length > 0 ? "tool_use" : "end_turn";
  out += event(
    "message_delta",
    `{"type":"message_delta","delta":{"stop_reason":"${stop}","stop_sequence":null},"usage":{"output_tokens":9}}`,
  );
  return out + event("message_stop", '{"type":"message_stop"}');
}

/** A whole Anthropic message whose one text block is `raw` (JSON string content). */
function anthropicJson(raw: string): string {
  return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text",` +
    `"text":"your key is ${raw}"}],"stop_reason":"end_turn","stop_sequence":null,` +
    '"usage":{"input_tokens":5,"output_tokens":3}}';
}

/** A chat stream whose one text delta is `raw` (JSON string content). */
function chatStream(raw: string): string {
  const chunk = (delta: string, finish = "null") =>
    `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test",` +
    `"choices":[{"index":0,"delta":${delta},"finish_reason":${finish}}]}\n\n`;
  return chunk('{"role":"assistant","content":""}') + chunk(`{"content":"your key is ${raw}"}`) +
    chunk("{}", '"stop"') +
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],' +
    '"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}\n\n' +
    "data: [DONE]\n\n";
}

const LOOKUP = { name: "lookup", schema: { type: "object", properties: { q: { type: "string" } } } };

/** A request of `protocol` for `model`, offering the lookup tool. */
function ask(gw: TestGateway, protocol: string, model: string, stream: boolean, store = false): Promise<Response> {
  const hi = [{ role: "user", content: "Hi" }];
  switch (protocol) {
    case "anthropic": {
      const tools = [{ name: LOOKUP.name, input_schema: LOOKUP.schema }];
      return gw.post("/v1/messages", { model, max_tokens: 64, stream, tools, messages: hi });
    }
    case "openai-chat": {
      const tools = [{ type: "function", function: { name: LOOKUP.name, parameters: LOOKUP.schema } }];
      return gw.post("/v1/chat/completions", { model, stream, tools, messages: hi });
    }
    case "openai-responses": {
      const tools = [{ type: "function", name: LOOKUP.name, parameters: LOOKUP.schema, strict: false }];
      return gw.post("/v1/responses", { model, stream, store, tools, input: "Hi" });
    }
    default: {
      const action = stream ? "streamGenerateContent?alt=sse" : "generateContent";
      const tools = [{ functionDeclarations: [{ name: LOOKUP.name, parameters: LOOKUP.schema }] }];
      return gw.post(`/v1beta/models/${model}:${action}`, {
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
        tools,
      });
    }
  }
}

async function gateway(upstream: FakeUpstream): Promise<TestGateway> {
  return await startGateway(upstream.url, { env: { TEST_ANTHROPIC_KEY: KEY, TEST_OPENAI_KEY: CHAT_KEY } });
}

function answerWith(upstream: FakeUpstream, route: string, body: string, type: string): void {
  upstream.routes.set(route, () => new Response(body, { headers: { "content-type": type } }));
}

const CLIENTS = ["anthropic", "openai-chat", "openai-responses", "gemini"];

for (const [name, encode] of Object.entries(ENCODINGS)) {
  Deno.test(`a key written with ${name} in a whole answer reaches no client`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await gateway(upstream);
    answerWith(upstream, "POST /anth/v1/messages", anthropicJson(encode(KEY)), "application/json");
    for (const protocol of CLIENTS) {
      const res = await ask(gw, protocol, "claude-test", false);
      const text = await readText(res);
      assert.equal(res.status, 200, text);
      assertNoKey(text, protocol);
      assert.match(text, /\[redacted\]/, protocol);
    }
  });

  Deno.test(`a key written with ${name} in a stream reaches no client of a translated stream`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await gateway(upstream);
    answerWith(
      upstream,
      "POST /anth/v1/messages",
      anthropicStream([`your key is ${encode(KEY)}`]),
      "text/event-stream",
    );
    answerWith(upstream, "POST /oai/v1/chat/completions", chatStream(encode(CHAT_KEY)), "text/event-stream");
    const cases = [["anthropic", "gpt-test"], ...CLIENTS.slice(1).map((protocol) => [protocol, "claude-test"])];
    for (const [protocol, model] of cases) {
      const res = await ask(gw, protocol, model, true);
      const text = await readText(res);
      assert.equal(res.status, 200, text);
      assertNoKey(text, `${protocol} from ${model}`);
      assert.match(text, /\[redacted\]/, protocol);
    }
  });
}

for (const [name, encode] of Object.entries(ENCODINGS)) {
  Deno.test(`a key written with ${name} in a passed-through stream reaches no client, as in a whole answer`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await gateway(upstream);
    // The upstream's own stream, sent in small chunks, so an escaped key is cut between them.
    const chunked = (text: string) => () =>
      new Response(ReadableStream.from(text.match(/[^]{1,7}/g)!.map((piece) => new TextEncoder().encode(piece))), {
        headers: { "content-type": "text/event-stream" },
      });
    upstream.routes.set("POST /anth/v1/messages", chunked(anthropicStream([`your key is ${encode(KEY)}`])));
    upstream.routes.set("POST /oai/v1/chat/completions", chunked(chatStream(encode(CHAT_KEY))));
    for (const [protocol, model] of [["anthropic", "claude-test"], ["openai-chat", "gpt-test"]]) {
      const res = await ask(gw, protocol, model, true);
      const text = await readText(res);
      assert.equal(res.status, 200, text);
      assertNoKey(text, `${protocol} passed through`);
      assert.match(text, /\[redacted\]/, protocol);
      assert.match(text, protocol === "anthropic" ? /event: message_stop/ : /data: \[DONE\]/, "the stream is whole");
    }
  });
}

/** A stream whose key is cut in three text deltas and in three argument fragments. */
function spreadStream(): string {
  const args = JSON.stringify(JSON.stringify({ q: KEY })).slice(1, -1);
  const at = args.indexOf(KEY.slice(0, 3));
  return anthropicStream(
    ["your key is ", KEY.slice(0, 6), KEY.slice(6, 15), KEY.slice(15)],
    [args.slice(0, at + 4), args.slice(at + 4, at + 12), args.slice(at + 12)],
  );
}

Deno.test("a key spread over deltas and argument fragments is never sent whole, on any client protocol", async () => {
  await using upstream = fakeUpstream();
  await using gw = await gateway(upstream);
  answerWith(upstream, "POST /anth/v1/messages", spreadStream(), "text/event-stream");
  let id = "";
  for (const protocol of CLIENTS) {
    const res = await ask(gw, protocol, "claude-test", true, protocol === "openai-responses");
    const text = await readText(res);
    assert.equal(res.status, 200, text);
    assertNoKey(text, protocol);
    id ||= /"id":"(resp_[^"]+)"/.exec(text)?.[1] ?? "";
  }
  // The stored response was put together from the same stream.
  const listed = await readText(
    await fetch(`${gw.url}/v1/responses/${id}`, { headers: { "x-api-key": gw.tokens.default } }),
  );
  assert.match(listed, /"object":"response"/);
  assertNoKey(listed, "the stored response");
});

Deno.test("a key spread over deltas and argument fragments is never sent whole over a Responses socket", async () => {
  await using upstream = fakeUpstream();
  await using gw = await gateway(upstream);
  answerWith(upstream, "POST /anth/v1/messages", spreadStream(), "text/event-stream");
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  const tools = [{ type: "function", name: LOOKUP.name, parameters: LOOKUP.schema, strict: false }];
  socket.send(create({ tools }));
  const events = await socket.until("response.completed", "error");
  assert.equal(events.at(-1)?.type, "response.completed", JSON.stringify(events.at(-1)));
  for (const event of events) assertNoKey(JSON.stringify(event), `socket ${event.type}`);
});

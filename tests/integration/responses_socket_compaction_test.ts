/**
 * @module Compaction on a Responses WebSocket (what Codex's built-in provider sends): a `response.create` ending with
 * a compaction_trigger gets the one sealed compaction item POST /v1/responses gives, and the socket's next turn
 * continues from it.
 */
import assert from "node:assert/strict";
import { SUMMARY_HEADER } from "../../src/translate/compaction.ts";
import { readSse } from "../_helpers.ts";
import { type Json, setup, turnsSent } from "../_responses.ts";
import { KINDS, type Turn } from "../_scripted_turns.ts";
import { openSocket } from "../_socket.ts";

const SUMMARY = "The user wants the time in UTC; get_time said noon; next: tell the user.";
const TURNS: Turn[] = [{ text: SUMMARY }, { text: SUMMARY }, { text: "It is noon, as noted." }];
const CONVERSATION: Json[] = [
  { role: "user", content: "What time is it in UTC?" },
  { type: "function_call", call_id: "call_1", name: "get_time", arguments: '{"tz":"UTC"}' },
  { type: "function_call_output", call_id: "call_1", output: "12:00 noon" },
];
const TRIGGER = { type: "compaction_trigger" };

for (const k of KINDS) {
  Deno.test(`a response.create ending with a compaction_trigger gets exactly one compaction item, as over HTTP (${k.kind} upstream)`, async () => {
    await using s = await setup({ ...k, stream: true }, TURNS, { env: { MODELGATE_COMPACTION_KEY: "k".repeat(32) } });
    await using socket = await openSocket(s.gw.url, { "x-api-key": s.token });
    socket.send({ type: "response.create", model: k.model, input: [...CONVERSATION, TRIGGER], store: false });
    const overSocket = await socket.until("response.completed", "error");
    const response = overSocket.at(-1)!.response as Json;
    assert.equal(overSocket.at(-1)!.type, "response.completed", JSON.stringify(overSocket.at(-1)));
    assert.equal(response.output.length, 1, JSON.stringify(response.output));
    assert.equal(response.output[0].type, "compaction");
    assert.match(response.output[0].encrypted_content, /^mgc1\.[A-Za-z0-9_-]+$/);
    const exchange = s.gw.exchanges.at(-1)!;
    assert.equal(exchange.transport, "websocket");
    assert.equal(exchange.compaction, "gateway");
    assert.ok(!JSON.stringify(s.upstream.requests[0].body).includes("compaction_trigger"));
    // The same request over HTTP streams the same events.
    const res = await s.gw.post("/v1/responses", {
      model: k.model,
      input: [...CONVERSATION, TRIGGER],
      store: false,
      stream: true,
    }, { "x-api-key": s.token });
    const overHttp = (await readSse(res)).map((m) => JSON.parse(m.data));
    assert.deepEqual(overSocket.map((e) => e.type), overHttp.map((e) => e.type));
    assert.deepEqual(overHttp.at(-1).response.output.map((i: Json) => i.type), ["compaction"]);
    // The socket's memory keeps the item: the next turn sends only its new message and the upstream gets the summary.
    socket.send({
      type: "response.create",
      model: k.model,
      previous_response_id: response.id,
      input: "And in Paris?",
      store: false,
    });
    const next = (await socket.until("response.completed", "error")).at(-1)!;
    assert.equal(next.type, "response.completed", JSON.stringify(next));
    assert.deepEqual(turnsSent(k.kind, s.upstream.requests[2].body as Json), [
      `user: ${SUMMARY_HEADER}\n\n${SUMMARY}`,
      "user: And in Paris?",
    ]);
  });
}

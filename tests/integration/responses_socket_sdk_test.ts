/**
 * @module The official OpenAI SDK's ResponsesWS through the gateway: a tool loop over one socket (a function call,
 * its output continued with previous_response_id under store: false) onto an Anthropic and a chat upstream.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { fakeUpstream, firstThen, sseReply } from "../_fake_upstream.ts";
import { deadlineFetch, fixture, startGateway, within } from "../_helpers.ts";

const TOOL = { type: "function" as const, name: "get_time", parameters: { type: "object" }, strict: false };

/** Sends one response.create and collects its events up to the terminal one; a WebSocket error fails the test. */
async function turn(ws: ResponsesWS, body: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const events: Record<string, unknown>[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    const onEvent = (event: Record<string, unknown>) => {
      events.push(event);
      if (event.type === "response.completed" || event.type === "response.failed") {
        ws.off("event", onEvent as never);
        resolve();
      }
    };
    ws.on("event", onEvent as never);
    ws.on("error", (error: unknown) => reject(error));
  });
  ws.send({ type: "response.create", ...body } as never);
  await within(ended, 15_000, "the response's terminal event");
  return events;
}

const CASES = [
  {
    name: "an Anthropic upstream",
    model: "claude-test",
    path: "POST /anth/v1/messages",
    first: "anthropic/tool_use.sse",
    then: "anthropic/text.sse",
    toolResult: (body: Record<string, unknown>) => JSON.stringify(body.messages).includes('"tool_result"'),
  },
  {
    name: "a chat upstream",
    model: "gpt-test",
    path: "POST /oai/v1/chat/completions",
    first: "openai-chat/tool_use.sse",
    then: "openai-chat/text.sse",
    toolResult: (body: Record<string, unknown>) => JSON.stringify(body.messages).includes('"role":"tool"'),
  },
];

for (const c of CASES) {
  Deno.test(`OpenAI SDK ResponsesWS runs a tool loop on one socket onto ${c.name}`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set(c.path, firstThen(() => sseReply(fixture(c.first)), () => sseReply(fixture(c.then))));
    await using gw = await startGateway(upstream.url);
    const client = new OpenAI({ apiKey: gw.tokens.oa, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
    const ws = new ResponsesWS(client);
    try {
      const first = await turn(ws, { model: c.model, input: "What time is it?", tools: [TOOL], store: false });
      const done = first.at(-1)!.response as OpenAI.Responses.Response;
      assert.equal(done.status, "completed");
      const call = done.output.find((item) => item.type === "function_call");
      assert.ok(call?.type === "function_call");
      const second = await turn(ws, {
        model: c.model,
        previous_response_id: done.id,
        input: [{ type: "function_call_output", call_id: call.call_id, output: "12:00 UTC" }],
        tools: [TOOL],
        store: false,
      });
      assert.equal(second.at(-1)!.type, "response.completed");
      assert.equal(upstream.requests.length, 2);
      const sent = upstream.requests[1].body!;
      assert.ok(JSON.stringify(sent.messages).includes("What time is it?"), "the first question went up again");
      assert.ok(c.toolResult(sent), "the tool's output went up as the upstream's tool result");
    } finally {
      const closed = new Promise<void>((resolve) => ws.on("close", () => resolve()));
      ws.close({ code: 1000, reason: "done" });
      await within(closed, 5000, "the SDK's socket closing");
    }
    assert.ok(gw.exchanges.filter((e) => e.transport === "websocket").every((e) => e.status === 200));
  });
}

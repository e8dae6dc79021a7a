/**
 * @module Real clients of the stateful Responses API through the gateway, on both upstream kinds: the Vercel AI SDK
 * (its defaults: the Responses API with store true, earlier answers sent back as item references) in a two-step tool
 * loop, and the official OpenAI SDK continuing by previous_response_id, reading, paging and deleting.
 */
import assert from "node:assert/strict";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import OpenAI from "openai";
import { deadlineFetch } from "../_reads.ts";
import { type Json, setup, toolLoopSent, turnsSent } from "../_responses.ts";
import { KINDS } from "../_scripted_turns.ts";

const getTime = tool({
  description: "The time in a time zone",
  inputSchema: jsonSchema<{ tz: string }>({ type: "object", properties: { tz: { type: "string" } } }),
  execute: ({ tz }) => Promise.resolve(`12:00 ${tz}`),
});

for (const c of KINDS) {
  for (const streamed of [false, true]) {
    Deno.test(
      `Vercel AI SDK ${streamed ? "streamText" : "generateText"} runs a two-step tool loop (${c.kind} upstream)`,
      async () => {
        await using s = await setup({ ...c, stream: streamed });
        const sent: Json[] = [];
        const provider = createOpenAI({
          baseURL: `${s.gw.url}/v1`,
          apiKey: s.token,
          fetch: (url, init) => {
            sent.push(JSON.parse(String(init?.body)));
            return deadlineFetch()(url, init);
          },
        });
        const options = {
          model: provider(c.model),
          prompt: "What time is it?",
          tools: { get_time: getTime },
          stopWhen: stepCountIs(2),
        };
        const text = streamed ? await streamText(options).text : (await generateText(options)).text;
        assert.equal(text, "It is noon.");
        // The SDK kept its defaults: the answer it had was stored, and it referred to it rather than resending it.
        assert.equal(sent.length, 2);
        assert.ok(sent.every((body) => body.store !== false));
        const references = sent[1].input.filter((item: Json) => item.type === "item_reference");
        assert.deepEqual(references.map((item: Json) => item.id.split("_")[0]), ["rs", "msg"]);
        assert.deepEqual(turnsSent(c.kind, s.upstream.requests[1].body!), toolLoopSent(c.kind, "12:00 UTC"));
      },
    );
  }

  Deno.test(`OpenAI SDK continues by previous_response_id, then reads, pages and deletes (${c.kind} upstream)`, async () => {
    await using s = await setup({ ...c, stream: false });
    const client = new OpenAI({ apiKey: s.token, baseURL: `${s.gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
    const first = await client.responses.create({
      model: c.model,
      input: "What time is it?",
      tools: [{ type: "function", name: "get_time", parameters: { type: "object" }, strict: false }],
    });
    const call = first.output.find((item) => item.type === "function_call");
    assert.ok(call?.type === "function_call");
    const stream = await client.responses.create({
      model: c.model,
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "12:00" }],
      stream: true,
    });
    let secondId = "";
    for await (const event of stream) if (event.type === "response.completed") secondId = event.response.id;
    const second = await client.responses.retrieve(secondId);
    assert.equal(second.output_text, "It is noon.");
    assert.deepEqual(turnsSent(c.kind, s.upstream.requests[1].body!).slice(-2), [
      'assistant calls get_time({"tz":"UTC"})',
      "tool call_1: 12:00",
    ]);
    const items: string[] = [];
    for await (const item of client.responses.inputItems.list(secondId, { limit: 2, order: "asc" })) {
      items.push(item.type);
    }
    assert.deepEqual(items, ["message", "reasoning", "message", "function_call", "function_call_output"]);
    await client.responses.delete(first.id);
    const gone = await client.responses.retrieve(first.id).then(() => undefined, (err) => err);
    assert.ok(gone instanceof OpenAI.NotFoundError, `got ${gone}`);
  });
}

/**
 * @module Guardrails on the Responses API's own paths: the official SDK's ResponsesWS (a socket's turns masked and
 * restored as HTTP's are), and stored responses, which hold the masked text in KV so that a turn continued with
 * previous_response_id sends the upstream the same placeholder and never the original.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { echoing, LEAKED_KEY } from "../_echo_upstream.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { guardedConfig } from "../_guard_config.ts";
import { deadlineFetch, startGateway, within } from "../_helpers.ts";

const KEY = "sk_live_7NLRwHlZvuCjp0xEFZo1zcfI";
const PLACEHOLDER = /\[REDACTED:stripe_key:[0-9a-f]{6}\]/;

Deno.test("guardrails on a Responses socket: the upstream gets placeholders, the client its key back and the leak masked", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url) });
  const client = new OpenAI({ apiKey: gw.tokens.oa, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
  const ws = new ResponsesWS(client);
  try {
    const events: Record<string, unknown>[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      ws.on(
        "event",
        ((event: Record<string, unknown>) => {
          events.push(event);
          if (event.type === "response.completed" || event.type === "response.failed") resolve();
        }) as never,
      );
      ws.on("error", (error: unknown) => reject(error));
    });
    ws.send({ type: "response.create", model: "gpt-test", input: `please leak; key ${KEY}`, store: false } as never);
    await within(ended, 15_000, "the response's terminal event");
    const done = events.at(-1)!.response as OpenAI.Responses.Response;
    const text = done.output.flatMap((item) => item.type === "message" ? item.content : [])
      .map((part) => part.type === "output_text" ? part.text : "").join("");
    assert.ok(text.includes(KEY), text);
    assert.ok(!JSON.stringify(events).includes(LEAKED_KEY));
    assert.match(text, /\[REDACTED:aws_access_key:/);
    assert.match(upstream.requests[0].raw, PLACEHOLDER);
    assert.ok(!upstream.requests[0].raw.includes(KEY));
    const turn = gw.exchanges.find((exchange) => exchange.transport === "websocket")!;
    assert.ok(turn.guardrails!.some((hit) => hit.scope === "output" && hit.kind === "aws_access_key"));
  } finally {
    const closed = new Promise<void>((resolve) => ws.on("close", () => resolve()));
    ws.close({ code: 1000, reason: "done" });
    await within(closed, 5000, "the SDK's socket closing");
  }
});

for (const stream of [false, true]) {
  Deno.test(`guardrails on stored responses (${stream ? "streamed" : "whole"}): KV holds what the client was sent, masked, with the placeholder of a restored key, and a continued turn sends the same placeholder`, async () => {
    await using upstream = fakeUpstream();
    echoing(upstream);
    await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url) });
    const client = new OpenAI({ apiKey: gw.tokens.oa, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
    // The model "leaks" a key of its own: the client gets it masked, and so must the store.
    const input = `please leak; remember ${KEY}`;
    const first = stream
      ? await streamedResponse(client, input)
      : await client.responses.create({ model: "claude-test", input });
    assert.ok(first.output_text.includes(KEY), "the client gets its key back");
    assert.match(first.output_text, /\[REDACTED:aws_access_key:[0-9a-f]{6}\]/);
    assert.ok(!first.output_text.includes(LEAKED_KEY));
    const second = await client.responses.create({
      model: "claude-test",
      previous_response_id: first.id,
      input: "what did I say?",
    });
    assert.equal(second.status, "completed");
    const kept = storedText(await keptValues(gw.store.kv));
    assert.ok(kept.includes(first.id), "the response was stored");
    assert.ok(!kept.includes(KEY), "a stored response holds the client's key");
    assert.ok(!kept.includes(LEAKED_KEY), "a stored response holds the key the model wrote");
    assert.match(kept, PLACEHOLDER);
    assert.match(kept, /\[REDACTED:aws_access_key:[0-9a-f]{6}\]/);
    // Read back, the response holds placeholders where its client got the key back: the store never held the key.
    const read = await client.responses.retrieve(first.id);
    assert.match(read.output_text, PLACEHOLDER);
    assert.ok(!read.output_text.includes(LEAKED_KEY));
    const [one, two] = upstream.requests.map((seen) => seen.raw);
    assert.ok(!two.includes(KEY) && !two.includes(LEAKED_KEY));
    assert.equal(two.match(PLACEHOLDER)![0], one.match(PLACEHOLDER)![0]);
  });
}

Deno.test("guardrails on stored responses: an answer an output rule refused, whole or streamed, is not kept", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  const block = "guardrails:\n  - { name: no-secrets, detect: [secrets], scope: [output], action: block }\n";
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url, block, "[no-secrets]") });
  for (const stream of [false, true]) {
    const res = await gw.post("/v1/responses", { model: "claude-test", input: "please leak", stream }, {
      authorization: `Bearer ${gw.tokens.oa}`,
    });
    const text = await res.text();
    assert.equal(res.status, stream ? 200 : 400, text);
    assert.match(text, /guardrail \\?"no-secrets\\?": the answer holds aws_access_key/);
  }
  assert.equal(upstream.requests.length, 2);
  const kept = storedText(await keptValues(gw.store.kv));
  assert.ok(!kept.includes("I read:"), "a refused answer was stored");
});

Deno.test("guardrails on compaction: a key the model writes in its summary is sealed, and sent on, as its placeholder", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url) });
  const client = new OpenAI({ apiKey: gw.tokens.oa, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
  const input = [{ role: "user" as const, content: `please leak; remember ${KEY}` }];
  const compacted = await client.responses.create({
    model: "claude-test",
    input: [...input, { type: "compaction_trigger" }] as never,
    store: false,
  });
  const [item] = compacted.output;
  assert.equal(item.type, "compaction");
  // The summary (the echo, with the key the upstream "leaked") reaches the next turn's upstream out of the item.
  await client.responses.create({ model: "claude-test", input: [item, { role: "user", content: "go on" }] as never });
  const next = upstream.requests[1].raw;
  assert.match(next, /\[REDACTED:aws_access_key:[0-9a-f]{6}\]/);
  assert.match(next, PLACEHOLDER);
  assert.ok(!next.includes(LEAKED_KEY) && !next.includes(KEY), next);
  const made = gw.exchanges.find((exchange) => exchange.compaction === "gateway")!;
  assert.ok(made.guardrails!.some((hit) => hit.scope === "output" && hit.kind === "aws_access_key"));
});

/** A streamed response's final state, as the SDK puts it together. */
async function streamedResponse(client: OpenAI, input: string): Promise<OpenAI.Responses.Response> {
  const stream = client.responses.stream({ model: "claude-test", input });
  return await stream.finalResponse();
}

/** Every value in KV. */
async function keptValues(kv: Deno.Kv): Promise<unknown[]> {
  const stored: unknown[] = [];
  for await (const entry of kv.list({ prefix: [] })) stored.push(entry.value);
  return stored;
}

/** Stored values as text, bytes decoded: what a KV dump would show. */
function storedText(values: unknown[]): string {
  return JSON.stringify(
    values,
    (_key, value) =>
      value instanceof Uint8Array ? new TextDecoder().decode(value) : typeof value === "bigint" ? String(value) : value,
  );
}

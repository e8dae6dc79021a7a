/**
 * @module Prompt and answer text on traces only when the operator opts in: a gateway with OTEL_DENO=true and
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true puts them on the model span in the GenAI message shape,
 * for an Anthropic answer and a Responses answer alike (without the opt-in nothing of them is exported:
 * tracing_test.ts); a group's masking rule holds there too.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, readText } from "../_helpers.ts";
import { attr, otlpEnv, otlpReceiver, text } from "../_otlp_receiver.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";

/** A Responses answer: a reasoning item with its summary, a message, and a function call. */
const RESPONSES_ANSWER = {
  id: "resp_trace_1",
  object: "response",
  model: "gpt-5",
  status: "completed",
  output: [
    { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "REASONING-TEXT-lynx" }] },
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "ANSWER-TEXT-puffin" }] },
    { type: "function_call", call_id: "call_1", name: "lookup", arguments: '{"q":"x"}' },
  ],
  usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12 },
};

Deno.test("with the content opt-in, the model span carries the prompt and the answer as GenAI messages", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-tracing-content-" });
  await using receiver = otlpReceiver();
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage("ANSWER-TEXT-otter")));
  upstream.routes.set("POST /resp/v1/responses", () => jsonReply(RESPONSES_ANSWER));
  try {
    const configFile = `${dir}/gateway.yaml`;
    const responses = `{ name: resp, protocol: openai-responses, base_url: "${upstream.url}/resp/v1", ` +
      "api_key_env: TEST_UP_KEY, models: [m2] }";
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`)
      .replace("models: [m1] }\n", `models: [m1] }\n  - ${responses}\n`)
      .replace("listing: anthropic, models: [m1]", "listing: anthropic, models: [m1, m2]");
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-content" };
    const { token } = await cliToken(dir, configFile, env);
    await using gateway = await startProcess({
      command: denoMain(dir, "serve", "--config", configFile),
      env: { ...env, ...otlpEnv(receiver), OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" },
    });
    const res = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json", "x-request-id": "req-content" },
      body: JSON.stringify({
        model: "m1",
        max_tokens: 8,
        system: "SYSTEM-TEXT-heron",
        messages: [{ role: "user", content: "PROMPT-TEXT-zebra" }],
      }),
    });
    assert.equal(res.status, 200, await readText(res));
    const model = await receiver.waitFor(
      "the model span",
      () => receiver.spans.find((span) => text(span, "modelgate.request_id") === "req-content"),
    );
    const json = (key: string) => JSON.parse((attr(model, key) as { stringValue: string }).stringValue);
    assert.deepEqual(json("gen_ai.input.messages"), [
      { role: "user", parts: [{ type: "text", content: "PROMPT-TEXT-zebra" }] },
    ]);
    assert.deepEqual(json("gen_ai.system_instructions"), [{ type: "text", content: "SYSTEM-TEXT-heron" }]);
    assert.deepEqual(json("gen_ai.output.messages"), [
      { role: "assistant", parts: [{ type: "text", content: "ANSWER-TEXT-otter" }], finish_reason: "end_turn" },
    ]);
    // A Responses answer, which once came out as no parts and a finish reason of "undefined".
    const answered = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": "req-resp" },
      body: JSON.stringify({ model: "m2", input: "PROMPT-TEXT-yak", store: false }),
    });
    assert.equal(answered.status, 200, await readText(answered));
    const responsesSpan = await receiver.waitFor(
      "the Responses model span",
      () => receiver.spans.find((span) => text(span, "modelgate.request_id") === "req-resp"),
    );
    const output = JSON.parse((attr(responsesSpan, "gen_ai.output.messages") as { stringValue: string }).stringValue);
    assert.deepEqual(output, [{
      role: "assistant",
      parts: [
        { type: "reasoning", content: "REASONING-TEXT-lynx" },
        { type: "text", content: "ANSWER-TEXT-puffin" },
        { type: "tool_call", id: "call_1", name: "lookup", arguments: '{"q":"x"}' },
      ],
      finish_reason: "completed",
    }]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with the content opt-in and a masking rule, a secret the model writes reaches the span only masked", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-tracing-guard-" });
  const secret = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4";
  await using receiver = otlpReceiver();
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage(`The token is ${secret}.`)));
  try {
    const configFile = `${dir}/gateway.yaml`;
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`)
      .replace(
        "models: [m1] }\n",
        "models: [m1] }\nguardrails:\n  - { name: no-secrets, detect: [secrets], " +
          "scope: [output], action: mask }\n",
      )
      .replace("listing: anthropic, models: [m1] }", "listing: anthropic, models: [m1], guardrails: [no-secrets] }");
    await Deno.writeTextFile(configFile, yaml);
    const env = { TEST_UP_KEY: "upstream-key-for-guard" };
    const { token } = await cliToken(dir, configFile, env);
    await using gateway = await startProcess({
      command: denoMain(dir, "serve", "--config", configFile),
      env: { ...env, ...otlpEnv(receiver), OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" },
    });
    const res = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json", "x-request-id": "req-guarded" },
      body: JSON.stringify({ model: "m1", max_tokens: 8, messages: [{ role: "user", content: "Which token?" }] }),
    });
    const answer = await readText(res);
    assert.equal(res.status, 200, answer);
    assert.doesNotMatch(answer, new RegExp(secret));
    const model = await receiver.waitFor(
      "the model span",
      () => receiver.spans.find((span) => text(span, "modelgate.request_id") === "req-guarded"),
    );
    const output = (attr(model, "gen_ai.output.messages") as { stringValue: string }).stringValue;
    assert.match(output, /\[REDACTED:github_token:[0-9a-f]{6}\]/);
    assert.doesNotMatch(JSON.stringify(receiver.spans), new RegExp(secret));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

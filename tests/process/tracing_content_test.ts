/**
 * @module Prompt and answer text on traces only when the operator opts in: a gateway with OTEL_DENO=true and
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true puts them on the model span in the GenAI message shape
 * (without the opt-in nothing of them is exported: tracing_test.ts).
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, readText } from "../_helpers.ts";
import { attr, otlpEnv, otlpReceiver, text } from "../_otlp_receiver.ts";
import { cliToken, denoMain, processConfigYaml, startProcess } from "../_process.ts";

Deno.test("with the content opt-in, the model span carries the prompt and the answer as GenAI messages", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-tracing-content-" });
  await using receiver = otlpReceiver();
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage("ANSWER-TEXT-otter")));
  try {
    const configFile = `${dir}/gateway.yaml`;
    const yaml = processConfigYaml(`${dir}/gateway.kv`).replace("http://127.0.0.1:9/v1", `${upstream.url}/up/v1`);
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
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * @module Guardrails on embeddings with the official OpenAI SDK: a key in a text to embed reaches the upstream as its
 * placeholder, a blocking rule refuses the request before any upstream call, and a group without rules is untouched.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { EMBED_KEYS, embeddingsConfig, mountOpenAi } from "../_embeddings_gateway.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { deadlineFetch, startGateway } from "../_helpers.ts";

const KEY = "AKIAQWERTYUIOPASDFGH";

function config(url: string, action: string): string {
  return embeddingsConfig({ url })
    .replace("groups:\n", `guardrails:\n  - { name: no-secrets, detect: [secrets], action: ${action} }\ngroups:\n`)
    .replace(/(  - \{ name: default, listing: openai, models: \[[^\]]*\])( \})/, "$1, guardrails: [no-secrets]$2");
}

Deno.test("guardrails on embeddings: a key is embedded as its placeholder, and a blocking rule refuses the request", async () => {
  await using upstream = fakeUpstream();
  mountOpenAi(upstream);
  for (const action of ["mask", "block"]) {
    await using gw = await startGateway(upstream.url, { configYaml: config(upstream.url, action), env: EMBED_KEYS });
    const client = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: gw.tokens.default,
      maxRetries: 0,
      fetch: deadlineFetch(),
    });
    const before = upstream.requests.length;
    const answer = await client.embeddings.create({ model: "embed-small", input: [`key ${KEY}`, "plain"] })
      .catch((err) => err);
    if (action === "mask") {
      assert.equal(answer.data.length, 2);
      const sent = upstream.requests.at(-1)!.body!.input as string[];
      assert.match(sent[0], /^key \[REDACTED:aws_access_key:[0-9a-f]{6}\]$/);
      assert.equal(sent[1], "plain");
    } else {
      assert.ok(answer instanceof OpenAI.BadRequestError);
      assert.match(answer.message, /guardrail "no-secrets": the request holds aws_access_key/);
      assert.equal(upstream.requests.length, before);
    }
  }
});

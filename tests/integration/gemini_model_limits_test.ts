/**
 * @module The token limits of a Gemini model entry (`inputTokenLimit`, `outputTokenLimit`), which Google's API always
 * gives and clients read to size their context: from the model's `context_window` and `max_output_tokens`, else its
 * upstream's `max_output_tokens`, else the documented defaults; a model's own `max_output_tokens` also caps what a
 * translated request asks.
 */
import assert from "node:assert/strict";
import { DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS } from "../../src/relay/routing.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { geminiCall as gemini } from "../_gemini_reader.ts";
import { anthropicMessage, startGateway } from "../_helpers.ts";

const EXTRA = (url: string) => ({
  extraUpstreams: `  - name: sized
    protocol: anthropic
    base_url: ${url}/anth/v1
    api_key_env: TEST_ANTHROPIC_KEY
    max_output_tokens: 4000
    models:
      - { id: claude-sized, upstream_id: claude-test, context_window: 200000, max_output_tokens: 64000 }
      - { id: claude-upstream-cap, upstream_id: claude-test }
      - { id: claude-small, upstream_id: claude-test, max_output_tokens: 1000 }
`,
  extraGroups:
    "  - { name: sized, listing: auto, models: [claude-sized, claude-upstream-cap, claude-small, claude-test] }",
});

const WANT: Record<string, [number, number]> = {
  "models/claude-sized": [200_000, 64_000],
  "models/claude-upstream-cap": [DEFAULT_CONTEXT_WINDOW, 4000],
  "models/claude-small": [DEFAULT_CONTEXT_WINDOW, 1000],
  "models/claude-test": [DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS],
};

Deno.test("Gemini model entries carry inputTokenLimit and outputTokenLimit from the config, else the defaults", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, EXTRA(upstream.url));
  const key = { "x-goog-api-key": (await gw.store.createToken({ group: "sized" })).secret };
  const listed = await (await gemini(gw, "/v1beta/models", undefined, key)).json();
  const limits = (m: { inputTokenLimit: number; outputTokenLimit: number }) => [m.inputTokenLimit, m.outputTokenLimit];
  assert.deepEqual(Object.fromEntries(listed.models.map((m: { name: string }) => [m.name, limits(m as never)])), WANT);
  for (const [name, want] of Object.entries(WANT)) {
    const one = await (await gemini(gw, `/v1beta/${name}`, undefined, key)).json();
    assert.deepEqual(limits(one), want, name);
  }
});

Deno.test("a model's own max_output_tokens caps a translated request, over its upstream's", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, EXTRA(upstream.url));
  const key = { "x-goog-api-key": (await gw.store.createToken({ group: "sized" })).secret };
  const ask = { contents: [{ role: "user", parts: [{ text: "Hi" }] }], generationConfig: { maxOutputTokens: 50_000 } };
  for (const model of ["claude-small", "claude-upstream-cap", "claude-sized"]) {
    const res = await gemini(gw, `/v1beta/models/${model}:generateContent`, ask, key);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  assert.deepEqual(upstream.requests.map((r) => r.body?.max_tokens), [1000, 4000, 50_000]);
});

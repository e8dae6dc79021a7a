/**
 * Compaction on `openai-responses` upstreams is the provider's own: POST /v1/responses/compact, a trailing
 * `compaction_trigger` and `context_management` reach it, and its `compaction` items reach the client, and come back
 * to it, unchanged. Its items mean nothing to another kind of upstream: sent there they are a 400 naming them.
 */
import assert from "node:assert/strict";
import { readSse, within } from "../_helpers.ts";
import { responsesRig } from "../_responses_upstream.ts";
import type { Json } from "../_fake_responses_api.ts";

const HISTORY = [
  { type: "message", role: "developer", content: "Be brief." },
  { type: "message", role: "user", content: "Read notes.txt" },
  { type: "function_call", call_id: "call_0", name: "read_file", arguments: "{}" },
  { type: "function_call_output", call_id: "call_0", output: "hi" },
];

Deno.test("POST /v1/responses/compact goes to the provider's compact endpoint, and its answer to the client unchanged", async () => {
  await using rig = await responsesRig();
  const res = await rig.post("/v1/responses/compact", { model: "codex", input: HISTORY, instructions: "Compact." });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const seen = rig.upstream.requests.at(-1)!;
  assert.equal(seen.path, "/rsp-a/v1/responses/compact");
  assert.deepEqual(seen.body, { model: "gpt-codex", input: HISTORY, instructions: "Compact." });
  assert.equal(text, rig.sent.get("POST /rsp-a/v1/responses/compact")!.at(-1));
  const answer = JSON.parse(text);
  assert.equal(answer.object, "response.compaction");
  assert.equal(answer.output.at(-1).type, "compaction");
  assert.equal(rig.gw.exchanges.at(-1)!.usage?.input_tokens, 40, "its usage is recorded");
  // The item goes back to the provider unchanged, which reads it.
  const next = await rig.post("/v1/responses", {
    model: "codex",
    input: [...answer.output, { type: "message", role: "user", content: "And now?" }],
  });
  assert.equal(next.status, 200, await next.text());
  assert.deepEqual(rig.upstream.requests.at(-1)!.body!.input, [
    ...answer.output,
    { type: "message", role: "user", content: "And now?" },
  ]);
  assert.deepEqual(rig.api["rsp-a"].compactions.at(-1), 1);
});

Deno.test("a trailing compaction_trigger is the provider's: one compaction item, streamed as it sent it", async () => {
  await using rig = await responsesRig();
  const input = [...HISTORY, { type: "compaction_trigger" }];
  const res = await rig.post("/v1/responses", { model: "gpt-codex", input, stream: true, store: false });
  const text = await within(res.text(), 5000, "the stream");
  assert.deepEqual(rig.upstream.requests.at(-1)!.body!.input, input);
  assert.equal(text, rig.sent.get("POST /rsp-a/v1/responses")!.at(-1));
  const done = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6))).at(-1);
  assert.deepEqual(done.response.output.map((i: Json) => i.type), ["compaction"]);
});

Deno.test("context_management reaches the provider, whose compaction item leads the answer", async () => {
  await using rig = await responsesRig();
  const res = await rig.post("/v1/responses", {
    model: "gpt-codex",
    input: HISTORY,
    context_management: [{ type: "compaction", compact_threshold: 1 }],
    stream: true,
  });
  const events = (await within(readSse(res), 5000, "the stream")).map((m) => JSON.parse(m.data));
  assert.deepEqual(rig.upstream.requests.at(-1)!.body!.context_management, [{
    type: "compaction",
    compact_threshold: 1,
  }]);
  assert.equal(events.at(-1).response.output[0].type, "compaction");
  assert.equal(rig.gw.exchanges.at(-1)!.compaction, undefined, "the gateway made no summary of its own");
});

Deno.test("a provider's compaction item sent to a model of another upstream kind is a 400 naming it", async () => {
  await using rig = await responsesRig();
  const made = await (await rig.post("/v1/responses/compact", { model: "gpt-codex", input: HISTORY })).json();
  const item = made.output.at(-1);
  const calls = rig.upstream.requests.length;
  const res = await rig.post("/v1/responses", {
    model: "claude-test",
    input: [item, { type: "message", role: "user", content: "Go on" }],
  });
  assert.equal(res.status, 400);
  const error = (await res.json()).error;
  assert.equal(error.param, "input[0].encrypted_content");
  assert.match(error.message, /not made by this gateway/);
  assert.equal(rig.upstream.requests.length, calls, "nothing went upstream");
});

/**
 * A model its provider serves only through the Responses API, reached through a chat upstream (`protocol: openai`):
 * the provider's refusal becomes a 400 in the client's protocol that names the fix, logged once per model, and it is
 * no outage: the deployment's health is untouched and its other models are served.
 */
import assert from "node:assert/strict";
import { messagesBody } from "../_helpers.ts";
import { responsesRig } from "../_responses_upstream.ts";

const FIX = /served only through the Responses API.*upstream "chat".*protocol: openai-responses/;

Deno.test("a Responses-only model on a chat upstream is a 400 naming the fix, in each client's protocol", async () => {
  await using rig = await responsesRig();
  const asks = [
    { path: "/v1/responses", body: { model: "gpt-codex-chat", input: "hi" } },
    { path: "/v1/chat/completions", body: { model: "gpt-codex-chat", messages: [{ role: "user", content: "hi" }] } },
    { path: "/v1/messages", body: messagesBody({ model: "gpt-codex-chat" }) },
    {
      path: "/v1/chat/completions",
      body: { model: "gpt-codex-chat", stream: true, messages: [{ role: "user", content: "hi" }] },
    },
  ];
  for (const ask of asks) {
    const res = await rig.post(ask.path, ask.body);
    const body = await res.json();
    assert.equal(res.status, 400, `${ask.path}: ${JSON.stringify(body)}`);
    assert.match(body.error.message, FIX);
    if (ask.path === "/v1/messages") assert.equal(body.error.type, "invalid_request_error");
    else assert.equal(body.error.param, "model");
  }
  const warnings = rig.gw.logs.filter((line) => line.event === "responses_only_model");
  assert.equal(warnings.length, 1, "the operator is told once per model");
  assert.match(String(warnings[0].advice), /protocol: openai-responses/);
  const tries = rig.upstream.requests.filter((r) => r.path === "/chat/v1/chat/completions");
  assert.equal(tries.length, asks.length, "each request asked the upstream once: no retry, no storm");
});

Deno.test("refusals of a Responses-only model do not cool its deployment down: its other models are served", async () => {
  await using rig = await responsesRig();
  for (let i = 0; i < 6; i++) {
    const res = await rig.post("/v1/chat/completions", {
      model: "gpt-codex-chat",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(res.status, 400);
    await res.body?.cancel();
  }
  const res = await rig.post("/v1/chat/completions", {
    model: "gpt-plain",
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal((await res.json()).choices[0].message.content, "chat ok");
  const standing = rig.gw.deps.health.snapshot(new Map([["chat", ["gpt-codex-chat", "gpt-plain"]]])).chat;
  assert.equal(standing.state, "ok");
  assert.deepEqual(standing.models["gpt-codex-chat"], { state: "ok", cooling_until: null, recent_failures: 0 });
});

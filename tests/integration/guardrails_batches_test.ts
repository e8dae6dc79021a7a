/**
 * @module Guardrails on Anthropic's Message Batches forwarded to the provider, with the official SDK: a key in a
 * request's params reaches the provider's batch as its placeholder, and a blocking rule refuses the create before the
 * provider gets it. (A batch the gateway runs itself serves each request through the generate path, guardrails and all.)
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { batchRig } from "../_batch_rig.ts";

const KEY = "ghp_ewA7huWJGZdRcWVrjDUcOIGo25MsKxzbpUig";

function rig(action: string) {
  return batchRig({
    extraYaml: `guardrails:\n  - { name: no-secrets, detect: [secrets], action: ${action} }\n`,
    // The rig's group line takes its limits as written: the group's rules ride after them.
    groupLimits: "{ requests_per_minute: 100000 }, guardrails: [no-secrets]",
  });
}

const REQUESTS = [{
  custom_id: "one",
  params: {
    model: "claude-batch",
    max_tokens: 100,
    system: `Use ${KEY} for the API`,
    messages: [{ role: "user" as const, content: `token ${KEY}` }],
  },
}];

Deno.test("guardrails on a forwarded batch: the provider gets placeholders; a blocking rule refuses the create", async () => {
  {
    await using masked = await rig("mask");
    await masked.anthropic().messages.batches.create({ requests: REQUESTS });
    const sent = masked.api.seen.find((s) => s.method === "POST" && s.path === "/anthropic/v1/messages/batches")!;
    assert.ok(!sent.body!.includes(KEY));
    assert.equal(sent.body!.match(/\[REDACTED:github_token:[0-9a-f]{6}\]/g)?.length, 2);
    assert.equal(JSON.parse(sent.body!).requests[0].params.model, "claude-up-1");
  }
  await using blocked = await rig("block");
  const refused = await blocked.anthropic().messages.batches.create({ requests: REQUESTS }).catch((err) => err);
  assert.ok(refused instanceof Anthropic.BadRequestError, String(refused));
  assert.match(refused.message, /guardrail \\?"no-secrets\\?": the request holds github_token/);
  assert.equal(blocked.api.seen.filter((s) => s.path === "/anthropic/v1/messages/batches").length, 0);
});

/**
 * @module Guardrails that refuse: a blocking rule's match on input is a 400 in the client's protocol naming the rule
 * and the kind and the upstream is not called; on output a stream ends with the protocol's error event before the
 * match goes out; and the policy webhook's allow, block (its reason reaching the client), timeout and error.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { GoogleGenAI } from "@google/genai";
import { echoing, LEAKED_KEY } from "../_echo_upstream.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { guardedConfig } from "../_guard_config.ts";
import { deadlineFetch, startGateway } from "../_helpers.ts";

const BLOCK = `guardrails:
  - { name: no-secrets, detect: [secrets], scope: [input, output], action: block }
`;
const KEY = "ghp_ewA7huWJGZdRcWVrjDUcOIGo25MsKxzbpUig";

Deno.test("guardrails block: a key on input is refused in each client's protocol, and no upstream is called", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url, BLOCK, "[no-secrets]") });
  const anthropic = new Anthropic({
    apiKey: gw.tokens.default,
    baseURL: gw.url,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
  const refused = await anthropic.messages.create({
    model: "claude-test",
    max_tokens: 8,
    messages: [{ role: "user", content: `token ${KEY}` }],
  }).catch((err) => err);
  assert.ok(refused instanceof Anthropic.BadRequestError);
  assert.equal((refused.error as { error: { type: string } }).error.type, "invalid_request_error");
  assert.match(refused.message, /guardrail \\?"no-secrets\\?": the request holds github_token/);
  assert.ok(!refused.message.includes(KEY));
  const openai = new OpenAI({
    apiKey: gw.tokens.default,
    baseURL: `${gw.url}/v1`,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
  const chat = await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: KEY }] })
    .catch((err) => err);
  assert.ok(chat instanceof OpenAI.BadRequestError);
  assert.equal(chat.code, "guardrail_blocked");
  const ai = new GoogleGenAI({ apiKey: gw.tokens.default, httpOptions: { baseUrl: gw.url, timeout: 30_000 } });
  const gemini = await ai.models.generateContent({ model: "claude-test", contents: KEY }).catch((err) => err);
  assert.match(String(gemini.message), /INVALID_ARGUMENT/);
  assert.match(String(gemini.message), /github_token/);
  assert.equal(upstream.requests.length, 0);
  assert.deepEqual(gw.exchanges[0].guardrails, [
    { rule: "no-secrets", kind: "github_token", action: "block", scope: "input", count: 1 },
  ]);
});

Deno.test("guardrails block: a key the model starts to write ends the stream with the protocol's error, the key never sent", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url, BLOCK, "[no-secrets]") });
  for (
    const [path, model, body] of [
      ["/v1/messages", "claude-test", { max_tokens: 8, messages: [{ role: "user", content: "please leak" }] }],
      ["/v1/chat/completions", "gpt-test", { messages: [{ role: "user", content: "please leak" }] }],
      ["/v1/responses", "gpt-test", { input: "please leak" }],
    ] as const
  ) {
    const res = await gw.post(path, { model, stream: true, ...body }, { authorization: `Bearer ${gw.tokens.default}` });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.match(text, /"(text|delta|content)":"ead: "/, `${path}: all text before the key went out: ${text}`);
    assert.ok(!text.includes(LEAKED_KEY.slice(0, 8)), `${path}: ${text}`);
    assert.match(text, /guardrail \\?"no-secrets\\?": the answer holds aws_access_key/, path);
    assert.ok(!text.includes("[DONE]") && !text.includes("message_stop") && !text.includes("response.completed"), path);
  }
});

/** A fake policy service: blocks texts holding "forbidden", answers slowly for "slow", fails for "broken". */
function policyService() {
  const seen: { body: Record<string, unknown>; authorization: string | null }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    seen.push({ body, authorization: req.headers.get("authorization") });
    const texts = (body.texts as string[]).join(" ");
    if (texts.includes("broken")) return new Response("oops", { status: 500 });
    if (texts.includes("slow")) await new Promise((resolve) => req.signal.addEventListener("abort", resolve));
    if (texts.includes("forbidden")) {
      return Response.json({ action: "block", reason: "project Falcon is confidential" });
    }
    return Response.json({ action: "allow" });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/check`, seen, [Symbol.asyncDispose]: () => server.shutdown() };
}

Deno.test("guardrails webhook: allow, block with its reason, timeout and error as on_error says", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using policy = policyService();
  const rules = `guardrails:
  - { name: no-secrets, detect: [secrets], scope: [input], action: mask }
  - name: policy
    webhook: { url: "${policy.url}", headers: { Authorization: POLICY_TOKEN }, timeout_ms: 200, on_error: block }
  - name: lenient
    webhook: { url: "${policy.url}", timeout_ms: 200, on_error: allow }
`;
  await using gw = await startGateway(upstream.url, {
    configYaml: guardedConfig(upstream.url, rules, "[no-secrets, policy]").replace(
      "{ name: auto, listing: auto, models: [claude-test] }",
      "{ name: auto, listing: auto, models: [claude-test], guardrails: [lenient] }",
    ),
    env: { POLICY_TOKEN: "Bearer policy-secret" },
  });
  const ask = (text: string, token = gw.tokens.default) =>
    gw.post("/v1/messages", { model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: text }] }, {
      "x-api-key": token,
    });
  const allowed = await ask(`hello ${KEY}`);
  assert.equal(allowed.status, 200);
  await allowed.body?.cancel();
  const question = policy.seen[0];
  assert.equal(question.authorization, "Bearer policy-secret");
  assert.equal(question.body.rule, "policy");
  assert.equal(question.body.scope, "input");
  assert.equal(question.body.model, "claude-test");
  assert.equal(question.body.protocol, "anthropic");
  assert.deepEqual(Object.keys(question.body.token as object).sort(), ["group", "id", "name"]);
  // The webhook sees the texts as they leave: masked, and never the client's token or an upstream key.
  const sent = JSON.stringify(question.body);
  assert.ok(!sent.includes(KEY) && sent.includes("[REDACTED:github_token:"));
  assert.ok(!sent.includes(gw.tokens.default) && !sent.includes("upstream-anthropic-key"));

  const blocked = await ask("the forbidden plan");
  assert.equal(blocked.status, 400);
  assert.match(await blocked.text(), /guardrail \\"policy\\": the request is refused: project Falcon is confidential/);
  const timedOut = await ask("a slow question");
  assert.equal(timedOut.status, 400);
  assert.match(await timedOut.text(), /could not be checked \(timeout\)/);
  const failed = await ask("a broken question");
  assert.match(await failed.text(), /could not be checked \(status 500\)/);
  // on_error: allow lets what cannot be checked through.
  const lenient = await ask("a broken question", gw.tokens.auto);
  assert.equal(lenient.status, 200);
  await lenient.body?.cancel();
  assert.equal(upstream.requests.length, 2);
  const kinds = gw.exchanges.flatMap((exchange) => exchange.guardrails ?? []).map((hit) =>
    `${hit.rule}:${hit.kind}:${hit.action}`
  );
  assert.deepEqual(kinds.filter((kind) => !kind.startsWith("no-secrets")), [
    "policy:webhook:allow",
    "policy:webhook:block",
    "policy:webhook_error:block",
    "policy:webhook_error:block",
    "lenient:webhook_error:allow",
  ]);
});

/** @module Unit tests for what identifies a request's session and how long its pin lives. */
import assert from "node:assert/strict";
import type { JsonObject, Protocol } from "../../src/core/types.ts";
import { MIN_CACHEABLE_BYTES, promptHead, sessionAffinity, type SessionInput } from "../../src/relay/session.ts";

const LONG = "x".repeat(MIN_CACHEABLE_BYTES);
const MARK = { type: "ephemeral" };

function input(protocol: Protocol, body: JsonObject, headers: Record<string, string> = {}): SessionInput {
  // The handler names the answer's id when the gateway keeps the answer, as it does unless `store` is false.
  const kept = protocol === "openai-responses" && body.store !== false;
  return {
    protocol,
    body,
    headers: new Headers(headers),
    size: JSON.stringify(body).length,
    responseId: kept ? "resp_0123" : undefined,
    token: "tok_1",
    model: "m",
    ttlMs: 300_000,
  };
}

const cached = (extra: JsonObject = {}): JsonObject => ({
  model: "m",
  system: [{ type: "text", text: LONG, cache_control: MARK }],
  messages: [{ role: "user", content: "hello" }],
  ...extra,
});

const CASES: { name: string; input: SessionInput; kind?: string; id?: string; ttlMs?: number; responseId?: string }[] =
  [
    {
      name: "takes Claude Code's session header first",
      input: input("anthropic", cached(), { "x-claude-code-session-id": "abc-123" }),
      kind: "session",
      id: "abc-123",
    },
    {
      name: "takes the header even for a prompt nothing marks for caching",
      input: input("anthropic", { model: "m", messages: [{ role: "user", content: "hi" }] }, {
        "x-claude-code-session-id": "abc-123",
      }),
      kind: "session",
      id: "abc-123",
    },
    {
      name: "takes the previous response before the prompt cache key",
      input: input("openai-responses", {
        model: "m",
        input: "hi",
        previous_response_id: "resp_9",
        prompt_cache_key: "k",
      }),
      kind: "response",
      id: "resp_9",
      responseId: "resp_0123",
    },
    {
      name: "takes OpenAI's prompt_cache_key",
      input: input("openai-chat", {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        prompt_cache_key: "conv-7",
      }),
      kind: "cache_key",
      id: "conv-7",
    },
    {
      name: "hashes an id that is long, odd or shaped like a secret",
      input: input("openai-chat", { model: "m", messages: [], prompt_cache_key: "sk-looks like a secret" }),
      kind: "cache_key",
    },
    {
      name: "pins an Anthropic prompt by its head when it marks a cache",
      input: input("anthropic", cached()),
      kind: "prefix",
    },
    {
      name: "pins nothing for an Anthropic prompt that marks no cache",
      input: input("anthropic", { model: "m", system: LONG, messages: [{ role: "user", content: "hi" }] }),
    },
    {
      name: "pins nothing for a prompt too short for any provider to cache",
      input: input("openai-chat", { model: "m", messages: [{ role: "user", content: "hi" }] }),
    },
    {
      name: "pins a long OpenAI prompt by its head (OpenAI caches on its own)",
      input: input("openai-chat", { model: "m", messages: [{ role: "user", content: LONG }] }),
      kind: "prefix",
    },
    {
      name: "keeps a pin an hour when a tool's cache asks for 1h",
      input: input("anthropic", cached({ tools: [{ name: "t", cache_control: { ...MARK, ttl: "1h" } }] })),
      kind: "prefix",
      ttlMs: 3_600_000,
    },
    {
      name: "keeps a pin an hour when a message block's cache asks for 1h",
      input: input("anthropic", {
        ...cached(),
        messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { ...MARK, ttl: "1h" } }] }],
      }),
      kind: "prefix",
      ttlMs: 3_600_000,
    },
    {
      name: "keeps a pin an hour for a top-level cache_control with ttl 1h",
      input: input("anthropic", { ...cached(), cache_control: { ...MARK, ttl: "1h" } }),
      kind: "prefix",
      ttlMs: 3_600_000,
    },
    {
      name: "keeps a pin a day for prompt_cache_retention 24h",
      input: input("openai-chat", { model: "m", messages: [], prompt_cache_key: "k", prompt_cache_retention: "24h" }),
      kind: "cache_key",
      id: "k",
      ttlMs: 86_400_000,
    },
    {
      name: "pins a kept Responses answer that has no session of its own",
      input: input("openai-responses", { model: "m", input: "hi" }),
      responseId: "resp_0123",
    },
    {
      name: "does not pin a Responses answer that is not kept",
      input: input("openai-responses", { model: "m", input: "hi", store: false }),
    },
  ];

for (const c of CASES) {
  Deno.test(`sessionAffinity() ${c.name}`, async () => {
    const got = await sessionAffinity(c.input);
    if (c.kind === undefined && c.responseId === undefined) return assert.equal(got, undefined);
    assert.ok(got);
    assert.equal(got.session?.kind, c.kind);
    if (c.id !== undefined) assert.equal(got.session?.id, c.id);
    else if (got.session) assert.match(got.session.id, /^#?[A-Za-z0-9_-]{22}$/);
    assert.equal(got.ttlMs, c.ttlMs ?? 300_000);
    assert.equal(got.responseId, c.responseId);
    assert.equal(got.token, "tok_1");
    assert.equal(got.model, "m");
  });
}

Deno.test("sessionAffinity() gives the turns of one conversation the same prefix id, and others a different one", async () => {
  const turn1 = cached({
    messages: [{ role: "user", content: [{ type: "text", text: "task A", cache_control: MARK }] }],
  });
  const turn2 = cached({
    messages: [
      { role: "user", content: "task A" },
      { role: "assistant", content: "done" },
      { role: "user", content: [{ type: "text", text: "next", cache_control: MARK }] },
    ],
  });
  const other = cached({ messages: [{ role: "user", content: "task B" }] });
  const id = async (body: JsonObject) => (await sessionAffinity(input("anthropic", body)))?.session?.id;
  assert.equal(await id(turn1), await id(turn2), "a moved cache mark and a string for its text block change nothing");
  assert.notEqual(await id(turn1), await id(other));
});

Deno.test("promptHead() is the system prompt and the first message, for each protocol", () => {
  const chat = {
    messages: [
      { role: "system", content: "s" },
      { role: "developer", content: "d" },
      { role: "user", content: "u1" },
      { role: "user", content: "u2" },
    ],
  };
  assert.deepEqual(promptHead("openai-chat", chat), [
    { role: "system", content: [{ type: "text", text: "s" }] },
    { role: "developer", content: [{ type: "text", text: "d" }] },
    { role: "user", content: [{ type: "text", text: "u1" }] },
  ]);
  assert.deepEqual(promptHead("openai-responses", { instructions: "i", input: "q" }), [
    "i",
    [{ type: "text", text: "q" }],
  ]);
  assert.deepEqual(promptHead("anthropic", { system: "s", messages: [{ role: "user", content: "u", x: 1 }] }), [
    [{ type: "text", text: "s" }],
    { role: "user", content: [{ type: "text", text: "u" }] },
  ]);
});

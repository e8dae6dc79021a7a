/**
 * @module Prompt-cache affinity across instances and client protocols: two gateways on one KV send a session to the
 * same deployment and learn of a move the other made; OpenAI clients keep a session on one deployment by
 * `prompt_cache_key` or by their prompt's head; a Responses request that continues a kept answer goes where it was made.
 */
import assert from "node:assert/strict";
import { cachingDeployments, conversation, POOL, poolGateway, seededRandom, turn } from "../_prompt_cache.ts";

Deno.test("two gateways on one KV send a session to the same deployment and learn of a move made by the other", async () => {
  await using deployments = cachingDeployments(POOL);
  const kv = await Deno.openKv(":memory:");
  try {
    let clock = Date.parse("2026-03-01T10:00:00Z");
    const now = () => new Date(clock);
    // Left alone, the first gateway picks pool-a and the second pool-b.
    const first = await poolGateway(deployments, { kv, now, random: () => 0.1 });
    await using _first = first.gateway;
    const second = await poolGateway(deployments, { kv, now, random: () => 0.9 });
    await using _second = second.gateway;
    const { token } = first;
    const served = () => deployments.turns.at(-1)!.deployment;
    const header = { headers: { "x-claude-code-session-id": "shared-session" } };
    const withId = conversation("with-id");
    const withoutId = conversation("without-id");

    for (const [conv, options] of [[withId, header], [withoutId, {}]] as const) {
      assert.equal(await turn(first.gateway.url, token, conv, options), 200);
      assert.equal(served(), "pool-a");
      await first.gateway.deps.pins.settled();
      assert.equal(await turn(second.gateway.url, token, conv, options), 200);
      assert.equal(served(), "pool-a", `the second gateway followed the pin (${conv.label})`);
    }

    // pool-a fails for the second gateway, which moves the session to pool-b.
    deployments.failing.add("pool-a");
    assert.equal(await turn(second.gateway.url, token, withId, header), 200);
    assert.equal(served(), "pool-b");
    await second.gateway.deps.pins.settled();
    deployments.failing.delete("pool-a");
    // The first gateway checked the pin moments ago: for up to sync_ms it still trusts what it knows.
    assert.equal(await turn(first.gateway.url, token, withId, header), 200);
    assert.equal(served(), "pool-a", "a brief disagreement");
    clock += 10_001;
    assert.equal(await turn(first.gateway.url, token, withId, header), 200);
    await first.gateway.deps.pins.settled();
    assert.equal(await turn(first.gateway.url, token, withId, header), 200);
    assert.equal(served(), "pool-b", "the first gateway learnt of the move from KV");
    assert.equal(await turn(second.gateway.url, token, withId, header), 200);
    assert.equal(served(), "pool-b");
  } finally {
    kv.close();
  }
});

/** A long first message, so a conversation without an id is worth a prefix pin. */
const BRIEF = "Context for the task: ".padEnd(6000, "the repository layout and its conventions. ");

const OPENAI_CASES = [
  {
    name: "Chat Completions with prompt_cache_key",
    path: "/v1/chat/completions",
    body: (label: string, history: unknown[]) => ({
      model: "claude-pool",
      max_tokens: 64,
      prompt_cache_key: `key-${label}`,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: `[session ${label}] go` },
        ...history,
      ],
    }),
  },
  {
    name: "Chat Completions without an id (the prompt's head)",
    path: "/v1/chat/completions",
    body: (label: string, history: unknown[]) => ({
      model: "claude-pool",
      max_tokens: 64,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: `[session ${label}] ${BRIEF}` },
        ...history,
      ],
    }),
  },
  {
    name: "Responses with prompt_cache_key",
    path: "/v1/responses",
    body: (label: string, history: unknown[]) => ({
      model: "claude-pool",
      instructions: "Be brief.",
      prompt_cache_key: `key-${label}`,
      store: false,
      input: [{ role: "user", content: `[session ${label}] go` }, ...history],
    }),
  },
];

for (const c of OPENAI_CASES) {
  Deno.test(`${c.name} keeps each session on one deployment while sessions spread`, async () => {
    await using deployments = cachingDeployments(POOL);
    const { gateway, token } = await poolGateway(deployments, { random: seededRandom(18) });
    await using _ = gateway;
    const labels = ["o0", "o1", "o2", "o3", "o4", "o5"];
    const histories = new Map(labels.map((label) => [label, [] as unknown[]]));
    for (let round = 0; round < 3; round++) {
      for (const label of labels) {
        const res = await fetch(`${gateway.url}${c.path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify(c.body(label, histories.get(label)!)),
        });
        assert.equal(res.status, 200, await res.clone().text());
        await res.body?.cancel();
        histories.get(label)!.push({ role: "assistant", content: "done" }, { role: "user", content: `next ${round}` });
      }
    }
    for (const label of labels) {
      const where = new Set(deployments.turns.filter((t) => t.session === label).map((t) => t.deployment));
      assert.equal(where.size, 1, `session ${label} went to ${[...where]}`);
    }
    assert.equal(new Set(deployments.turns.map((t) => t.deployment)).size, 2, "new sessions spread by weight");
  });
}

Deno.test("a kept Responses answer is pinned under its id, and a previous_response_id goes where it was made", async () => {
  await using deployments = cachingDeployments(POOL);
  let choice = 0.1;
  const { gateway, token, tokenId } = await poolGateway(deployments, { random: () => choice });
  await using _ = gateway;
  const respond = async (body: Record<string, unknown>) => {
    const res = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-pool", ...body }),
    });
    assert.equal(res.status, 200);
    return { id: (await res.json()).id as string, served: deployments.turns.at(-1)!.deployment };
  };
  const pinOf = async (id: string) =>
    (await gateway.store.kv.get<{ upstream: string }>(["affinity", tokenId, "claude-pool", "response", id])).value;

  const first = await respond({ input: "[session r] hello" });
  assert.equal(first.served, "pool-a");
  await gateway.deps.pins.settled();
  assert.equal((await pinOf(first.id))?.upstream, "pool-a");
  // Left alone, the next request would go to pool-b; continuing the first answer, it goes where that was made.
  choice = 0.9;
  const second = await respond({ previous_response_id: first.id, input: "and again" });
  assert.equal(second.served, "pool-a");
  assert.equal(gateway.exchanges.at(-1)!.affinity, "kept");
  const third = await respond({ previous_response_id: second.id, input: "once more", store: false });
  assert.equal(third.served, "pool-a");
  await gateway.deps.pins.settled();
  // An answer that is not kept cannot be continued by its id, so it gets no pin.
  assert.equal(await pinOf(third.id), null);
});

/**
 * @module Prompt-cache affinity over real HTTP, against two deployments of one model that each keep a prompt cache of
 * their own: sessions read back what their last turn cached, with Claude Code's session id or by their prompt's
 * head; new sessions still spread by weight; a failing deployment's sessions move and stay; pins end with their TTL;
 * tokens never share a pin; and the log, the request log and /metrics show it.
 */
import assert from "node:assert/strict";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";
import {
  cachingDeployments,
  type Conversation,
  conversation,
  POOL,
  poolGateway,
  readBack,
  seededRandom,
  shares,
  turn,
} from "../_prompt_cache.ts";
import type { TestGateway } from "../_helpers.ts";
import { requestLog } from "../../src/usage/query.ts";

/** Runs `rounds` turns of every conversation, one session after another; half the sessions stream. */
async function rounds(
  gateway: TestGateway,
  token: string,
  convs: Conversation[],
  count: number,
  headers?: (conv: Conversation) => HeadersInit,
): Promise<void> {
  for (let round = 0; round < count; round++) {
    for (const [i, conv] of convs.entries()) {
      const status = await turn(gateway.url, token, conv, { stream: i % 2 === 0, headers: headers?.(conv) });
      assert.equal(status, 200, `session ${conv.label}, round ${round}`);
    }
  }
}

const sessions = (count: number) => Array.from({ length: count }, (_, i) => conversation(`s${i}`));
const sessionHeader = (conv: Conversation) => ({ "x-claude-code-session-id": `c0ffee00-${conv.label}` });

Deno.test("sessions with Claude Code's session id read back what they cached, and spread by weight", async () => {
  await using deployments = cachingDeployments(POOL);
  const { gateway, token } = await poolGateway(deployments, { random: seededRandom(18) });
  await using _ = gateway;
  await rounds(gateway, token, sessions(10), 8, sessionHeader);

  const readShare = readBack(deployments.turns);
  assert.ok(readShare >= 0.98, `read back ${readShare.toFixed(3)} of what the previous turn cached`);
  for (const [i, share] of shares(deployments.turns, POOL).entries()) {
    assert.ok(share >= 0.2, `${POOL[i]} carried ${share} of the traffic`);
  }
  // Every session made its pin once and followed it after.
  const outcomes = gateway.exchanges.map((exchange) => exchange.affinity);
  assert.equal(outcomes.filter((outcome) => outcome === "made").length, 10);
  assert.equal(outcomes.filter((outcome) => outcome === "kept").length, 70);

  // The log and the request log name the deployment and the pin; /metrics counts pins and cache tokens per model.
  const line = gateway.logs.findLast((entry) => entry.event === "request")!;
  assert.equal(line.model, "claude-pool");
  assert.ok(POOL.includes(line.upstream as typeof POOL[number]));
  assert.equal(line.affinity, "kept");
  await gateway.flush();
  const [entry] = await requestLog(gateway.store.kv, { limit: 1 });
  assert.equal(entry.affinity, "kept");
  assert.equal(entry.upstream, line.upstream);
  const page = parsePrometheusText(await (await fetch(`${gateway.url}/metrics`)).text());
  assert.equal(sampleValue(page, "modelgate_affinity_total", { model: "claude-pool", outcome: "kept" }), 70);
  const tokens = (type: string) => sampleValue(page, "modelgate_tokens_total", { model: "claude-pool", type });
  const sum = (field: "read" | "written") => deployments.turns.reduce((total, t) => total + t[field], 0);
  assert.equal(tokens("cache_read"), sum("read"));
  assert.equal(tokens("cache_creation"), sum("written"));
});

Deno.test("sessions without a session id keep their cache by their prompt's head, and spread by weight", async () => {
  await using deployments = cachingDeployments(POOL);
  const { gateway, token } = await poolGateway(deployments, { random: seededRandom(7) });
  await using _ = gateway;
  await rounds(gateway, token, sessions(10), 8);

  const readShare = readBack(deployments.turns);
  assert.ok(readShare >= 0.95, `read back ${readShare.toFixed(3)} of what the previous turn cached`);
  for (const [i, share] of shares(deployments.turns, POOL).entries()) {
    assert.ok(share >= 0.2, `${POOL[i]} carried ${share} of the traffic`);
  }
});

Deno.test("without affinity the same sessions read back far less: the measure tells the difference", async () => {
  await using deployments = cachingDeployments(POOL);
  const { gateway, token } = await poolGateway(deployments, {
    random: seededRandom(18),
    routing: "affinity: { enabled: false }",
  });
  await using _ = gateway;
  await rounds(gateway, token, sessions(10), 8, sessionHeader);
  const readShare = readBack(deployments.turns);
  assert.ok(readShare < 0.9, `read back ${readShare.toFixed(3)} without affinity`);
  assert.ok(gateway.exchanges.every((exchange) => exchange.affinity === undefined));
});

Deno.test("a failing pinned deployment moves its sessions to the other one, and they stay after it recovers", async () => {
  await using deployments = cachingDeployments(POOL);
  let clock = Date.parse("2026-03-01T10:00:00Z");
  const { gateway, token } = await poolGateway(deployments, {
    random: seededRandom(18),
    now: () => new Date(clock),
  });
  await using _ = gateway;
  const convs = sessions(8);
  await rounds(gateway, token, convs, 2, sessionHeader);
  const before = new Map(deployments.turns.map((t) => [t.session, t.deployment]));
  const moved = convs.filter((conv) => before.get(conv.label) === "pool-a").map((conv) => conv.label);
  assert.ok(moved.length > 0 && moved.length < convs.length, "both deployments hold sessions");

  deployments.failing.add("pool-a");
  await rounds(gateway, token, convs, 1, sessionHeader);
  deployments.failing.delete("pool-a");
  // Past every cooldown, well within the pins' five minutes: pool-a is healthy again.
  clock += 120_000;
  const sentToA = deployments.sent.get("pool-a")!;
  const mark = deployments.turns.length;
  await rounds(gateway, token, convs, 3, sessionHeader);

  const after = deployments.turns.slice(mark);
  for (const label of moved) {
    assert.ok(after.filter((t) => t.session === label).every((t) => t.deployment === "pool-b"), `${label} stayed`);
  }
  assert.equal(deployments.sent.get("pool-a"), sentToA, "no session went back to pool-a");
  assert.ok(readBack(after) >= 0.98, `read back ${readBack(after)} after the move`);
  assert.equal(gateway.exchanges.filter((exchange) => exchange.affinity === "moved").length, moved.length);
});

Deno.test("pins end with the cache they protect: 5 minutes after the last use, or an hour for ttl 1h", async () => {
  await using deployments = cachingDeployments(POOL);
  let clock = Date.parse("2026-03-01T10:00:00Z");
  // Below 0.5 the weighted choice puts pool-a first, from 0.5 pool-b.
  let choice = 0.1;
  const { gateway, token } = await poolGateway(deployments, { random: () => choice, now: () => new Date(clock) });
  await using _ = gateway;
  const served = () => deployments.turns.at(-1)!.deployment;
  for (const ttl of [undefined, "1h"] as const) {
    const life = ttl ? 3_600_000 : 300_000;
    const conv = conversation(`ttl-${ttl ?? "5m"}`);
    choice = 0.1;
    assert.equal(await turn(gateway.url, token, conv, { ttl }), 200);
    assert.equal(served(), "pool-a");
    choice = 0.9;
    clock += life - 1;
    assert.equal(await turn(gateway.url, token, conv, { ttl }), 200);
    assert.equal(served(), "pool-a", "the pin holds until its life has passed since the last use");
    clock += life;
    assert.equal(await turn(gateway.url, token, conv, { ttl }), 200);
    assert.equal(served(), "pool-b", "an expired pin no longer holds: the weighted choice decides");
  }
});

Deno.test("two tokens sending identical prompts are pinned independently", async () => {
  await using deployments = cachingDeployments(POOL);
  let choice = 0.1;
  const { gateway, token } = await poolGateway(deployments, { random: () => choice });
  await using _ = gateway;
  const other = (await gateway.store.createToken({ group: "pool" })).secret;
  const served = () => deployments.turns.at(-1)!.deployment;
  const headers = { "x-claude-code-session-id": "same-session-id" };
  // Each token keeps its own copy of the conversation, so both send the very same bodies.
  const mine = conversation("twin");
  const theirs = conversation("twin");
  assert.equal(await turn(gateway.url, token, mine, { headers }), 200);
  assert.equal(served(), "pool-a");
  choice = 0.9;
  assert.equal(await turn(gateway.url, other, theirs, { headers }), 200);
  assert.equal(served(), "pool-b", "the other token's identical session is not sent where the first is pinned");
  assert.equal(await turn(gateway.url, token, mine, { headers }), 200);
  assert.equal(served(), "pool-a");
  choice = 0.1;
  assert.equal(await turn(gateway.url, other, theirs, { headers }), 200);
  assert.equal(served(), "pool-b");
});

Deno.test("Claude Code's session id pins even a short prompt, which pins nothing by its head", async () => {
  await using deployments = cachingDeployments(POOL);
  let choice = 0.1;
  const { gateway, token } = await poolGateway(deployments, { random: () => choice });
  await using _ = gateway;
  const served = async (headers: HeadersInit) => {
    const res = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json", ...headers },
      body: JSON.stringify({ model: "claude-pool", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    return deployments.turns.at(-1)!.deployment;
  };
  const session = { "x-claude-code-session-id": "short-session" };
  choice = 0.1;
  assert.equal(await served(session), "pool-a");
  assert.equal(await served({}), "pool-a");
  choice = 0.9;
  assert.equal(await served(session), "pool-a", "the session stays");
  assert.equal(await served({}), "pool-b", "no session: the weighted choice");
});

/** @module Test wiring for batches the gateway runs: a gateway with them on, callers, and reading batches as a client. */
import assert from "node:assert/strict";
import { idStore } from "../src/batches/ids.ts";
import type { GatewayBatchRunner, IdRecord } from "../src/core/batch_contract.ts";
import type { Principal } from "../src/core/principal.ts";
import { chatCompletion, type FakeUpstream, jsonReply } from "./_fake_upstream.ts";
import { GEMINI_KEY, geminiUpstreamYaml } from "./_gemini_upstream.ts";
import { startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

export type Obj = Record<string, unknown>;

/** The text of a request's last user message, which the fakes echo back. */
export function marker(body: Obj | undefined): string {
  const messages = (body?.messages ?? []) as { content: unknown }[];
  const content = messages.at(-1)?.content;
  return typeof content === "string" ? content : JSON.stringify(content);
}

/** A gateway running batches, with the Gemini upstream and a group `mixed` of a chat and a Gemini model. */
export async function gateway(upstream: FakeUpstream, options: StartOptions = {}): Promise<TestGateway> {
  const gem = geminiUpstreamYaml(upstream.url);
  return await startGateway(upstream.url, {
    ...options,
    extraUpstreams: gem.extraUpstreams + (options.extraUpstreams ?? ""),
    extraGroups: `${gem.extraGroups}  - { name: mixed, listing: anthropic, models: [gpt-test, gemini-test] }\n` +
      (options.extraGroups ?? ""),
    extraYaml: options.extraYaml ?? "batches: { poll_ms: 50 }\n",
    env: { TEST_GEMINI_KEY: GEMINI_KEY },
    batches: {},
  });
}

/** A token of `group` and the principal it runs as. */
export async function caller(gw: TestGateway, group: string): Promise<Principal> {
  const { record } = await gw.store.createToken({ group });
  const found = await gw.store.getGroup(group);
  assert.ok(found);
  return { token: record, group: found };
}

/** The gateway's batches, as the batch routes call them. */
export function runner(gw: TestGateway): GatewayBatchRunner {
  assert.ok(gw.deps.batchRunner);
  return gw.deps.batchRunner;
}

/** The id record of a batch as the routes look it up for its owner. */
export async function recordOf(gw: TestGateway, id: string, owner: Principal): Promise<IdRecord> {
  const record = await idStore(gw.store.kv).owned("batch", id, owner.token.id);
  assert.ok(record, `batch ${id} is recorded as its owner's`);
  return record;
}

/** Polls the batch as a client does until `done` holds of it. */
export async function pollUntil(
  gw: TestGateway,
  record: IdRecord,
  done: (batch: Obj) => boolean,
): Promise<Obj> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const batch = await runner(gw).retrieve(record, gw.url);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch never got there: ${JSON.stringify(batch)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function linesOf(stream: ReadableStream<Uint8Array>): Promise<Obj[]> {
  const text = await new Response(stream).text();
  assert.ok(text === "" || text.endsWith("\n"), "each line ends in a newline");
  assert.ok(!text.includes("\n\n") && !text.startsWith("\n"), "no blank line");
  return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

/**
 * A chat upstream that holds every request until `release` (answering each with its marker after `said`): `arrived`
 * resolves with the first one.
 */
export function heldChat(upstream: FakeUpstream, said: string): { arrived: Promise<void>; release(): void } {
  const arrived = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  upstream.routes.set("POST /oai/v1/chat/completions", async (seen) => {
    arrived.resolve();
    await release.promise;
    return jsonReply(chatCompletion(`${said} ${marker(seen.body)}`));
  });
  return { arrived: arrived.promise, release: () => release.resolve() };
}

/** Makes an Anthropic batch of one short request per custom id, all naming `model`; the batch and its id record. */
export async function messagesBatch(gw: TestGateway, owner: Principal, model: string, ids: string[]) {
  const made = await runner(gw).create({
    protocol: "anthropic",
    caller: owner,
    requestId: "req_test",
    requests: ids.map((id) => ({
      custom_id: id,
      endpoint: "/v1/messages" as const,
      body: { model, max_tokens: 8, messages: [{ role: "user", content: id }] },
    })),
  });
  return { made, record: await recordOf(gw, made.id as string, owner) };
}

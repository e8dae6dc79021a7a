/**
 * Anthropic's Message Batches through the gateway with the official SDK onto a fake Anthropic that keeps batches per
 * account: create with aliases mapped, retrieve polled to ended, results matched by custom_id and fetched from the
 * gateway (never the provider's results_url), cancel, list, delete; a second token's 404s and empty listing.
 */
import assert from "node:assert/strict";
import { batchRig } from "../_batch_rig.ts";

const REQUESTS = [
  {
    custom_id: "first",
    params: { model: "claude-batch", max_tokens: 100, messages: [{ role: "user" as const, content: "One" }] },
  },
  {
    custom_id: "second",
    params: { model: "claude-2", max_tokens: 50, messages: [{ role: "user" as const, content: "Two" }] },
  },
];

Deno.test("Anthropic batches: the SDK creates, polls to ended and reads results matched by custom_id from the gateway", async () => {
  await using rig = await batchRig();
  const client = rig.anthropic();
  const made = await client.messages.batches.create({ requests: REQUESTS });
  assert.equal(made.processing_status, "in_progress");
  assert.equal(made.results_url, null);
  const sent = rig.api.seen.find((s) => s.method === "POST" && s.path === "/anthropic/v1/messages/batches")!;
  assert.deepEqual(JSON.parse(sent.body!).requests.map((r: { params: { model: string } }) => r.params.model), [
    "claude-up-1",
    "claude-up-2",
  ], "aliases are mapped to the upstream's ids inside each request");
  assert.equal(sent.headers.get("x-api-key"), "anth-team-key");
  assert.ok(!sent.body!.includes(rig.token));
  let batch = await client.messages.batches.retrieve(made.id);
  assert.equal(batch.processing_status, "in_progress");
  rig.api.advance();
  batch = await client.messages.batches.retrieve(made.id);
  assert.equal(batch.processing_status, "ended");
  assert.equal(batch.results_url, `${rig.gw.url}/v1/messages/batches/${made.id}/results`);
  const before = rig.api.seen.length;
  const results = new Map<string, string>();
  for await (const line of await client.messages.batches.results(made.id)) {
    assert.equal(line.result.type, "succeeded");
    if (line.result.type === "succeeded") {
      results.set(line.custom_id, (line.result.message.content[0] as { text: string }).text);
    }
  }
  assert.deepEqual(Object.fromEntries(results), { first: "answer to first", second: "answer to second" });
  const fetched = rig.api.seen.slice(before).filter((s) => s.path.endsWith("/results"));
  assert.ok(fetched.every((s) => s.headers.get("x-api-key") === "anth-team-key"), "results went through the gateway");
  const listed = await client.messages.batches.list();
  assert.deepEqual(listed.data.map((b) => b.id), [made.id]);
  const deleted = await client.messages.batches.delete(made.id);
  assert.deepEqual(deleted, { id: made.id, type: "message_batch_deleted" });
  await assert.rejects(
    client.messages.batches.retrieve(made.id),
    (err: Error & { status?: number }) => err.status === 404,
  );
});

Deno.test("Anthropic batches: cancel, and a results request before the end is a 409", async () => {
  await using rig = await batchRig();
  const client = rig.anthropic();
  const made = await client.messages.batches.create({ requests: REQUESTS });
  const early = await fetch(`${rig.gw.url}/v1/messages/batches/${made.id}/results`, {
    headers: { "x-api-key": rig.token },
  });
  assert.equal(early.status, 409);
  assert.equal((await early.json()).error.type, "invalid_request_error");
  const canceling = await client.messages.batches.cancel(made.id);
  assert.equal(canceling.processing_status, "canceling");
  rig.api.advance();
  const types = [];
  for await (const line of await client.messages.batches.results(made.id)) types.push(line.result.type);
  assert.deepEqual(types, ["canceled", "canceled"]);
});

Deno.test("Anthropic batches: another token of the same group gets 404s and an empty listing", async () => {
  await using rig = await batchRig();
  const made = await rig.anthropic().messages.batches.create({ requests: REQUESTS });
  rig.api.advance();
  const stranger = rig.anthropic(rig.other);
  for (
    const call of [
      () => stranger.messages.batches.retrieve(made.id),
      () => stranger.messages.batches.cancel(made.id),
      () => stranger.messages.batches.delete(made.id),
      () => stranger.messages.batches.results(made.id),
    ]
  ) {
    await assert.rejects(call(), (err: Error & { status?: number }) => err.status === 404);
  }
  assert.deepEqual((await stranger.messages.batches.list()).data, []);
  assert.equal((await rig.anthropic().messages.batches.retrieve(made.id)).processing_status, "ended");
});

/**
 * @module Responses on `serve --workers 2`: a stored response made through one worker is read through both, and a
 * compaction item sealed by one worker (no MODELGATE_COMPACTION_KEY set) opens on both, since the workers of one
 * process share the sealing key made at start.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage } from "../_helpers.ts";
import { answeredBy, freshFetch, workersIn, workersWithToken } from "../_workers.ts";

const ROUNDS = 16;

Deno.test("2 workers: a stored response and a sealed compaction item made on one worker are usable on both", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-responses-" });
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /up/v1/messages", () => jsonReply(anthropicMessage()));
  try {
    const { gateway, token } = await workersWithToken(dir, upstream.url);
    await using _ = gateway;
    const respond = (body: Record<string, unknown>) =>
      freshFetch(`${gateway.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "m1", ...body }),
      });

    const stored = await respond({ input: "Remember this." });
    assert.equal(stored.status, 200, stored.text);
    const { id } = JSON.parse(stored.text);
    const reads = await Promise.all(Array.from({ length: ROUNDS }, async () => {
      return (await freshFetch(`${gateway.url}/v1/responses/${id}`, { headers: { authorization: `Bearer ${token}` } }))
        .status;
    }));
    assert.deepEqual(reads, Array(ROUNDS).fill(200), "every worker reads the stored response");

    const compacted = await respond({
      input: [{ role: "user", content: "What time is it?" }, { type: "compaction_trigger" }],
      store: false,
    });
    assert.equal(compacted.status, 200, compacted.text);
    const [item] = JSON.parse(compacted.text).output;
    assert.equal(item.type, "compaction");
    const turns = await Promise.all(Array.from({ length: ROUNDS }, async () => {
      const next = await respond({ input: [item, { role: "user", content: "And now?" }], store: false });
      return next.status === 200 ? 200 : `${next.status} ${next.text}`;
    }));
    assert.deepEqual(turns, Array(ROUNDS).fill(200), "every worker opens the item");

    assert.equal(await gateway.stop(), 0);
    assert.deepEqual(workersIn(answeredBy(gateway, "/v1/responses/:id")), [1, 2], "both read the stored response");
    const turnLines = answeredBy(gateway, "/v1/responses").slice(-ROUNDS);
    assert.deepEqual(workersIn(turnLines), [1, 2], "both continued after the compaction item");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

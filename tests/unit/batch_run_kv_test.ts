/**
 * @module The KV model of a gateway-run batch: requests and results past one KV value's 64 KiB kept in parts, a
 * request claimed by one instance at a time, a dead instance's claim taken over once its lease lapses, a result kept
 * only under the claim that ran it and only once, and the results read back in the protocol's lines.
 */
import assert from "node:assert/strict";
import {
  claimRequest,
  commitAndClaim,
  commitResult,
  liveClaims,
  releaseClaim,
  renewClaim,
  unfinished,
} from "../../src/batches/run/claims.ts";
import { cutParts, PART_BYTES } from "../../src/batches/run/chunks.ts";
import { countsOf, createRun, deleteRun, getRun, listRuns, readRequest } from "../../src/batches/run/records.ts";
import { resultStream } from "../../src/batches/run/results.ts";
import { anthropicLine } from "../../src/batches/run/formats.ts";
import { groupCommitter } from "../../src/batches/run/committer.ts";

const DAY = 86_400_000;

async function withKv(run: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await run(kv);
  } finally {
    kv.close();
  }
}

function makeRun(kv: Deno.Kv, requests: { custom_id: string; body: Record<string, unknown> }[], now = 1_000) {
  return createRun(kv, {
    id: "msgbatch_test",
    protocol: "anthropic",
    endpoint: "/v1/messages",
    token_id: "tok_a",
    requests,
    now,
    windowMs: DAY,
    keepMs: 29 * DAY,
  });
}

Deno.test("a request and a result larger than one KV value are kept in parts and read back whole", async () => {
  await withKv(async (kv) => {
    // 640 KiB of text (more parts than one commit takes with a result), multi-byte characters cut across parts.
    const big = "é".repeat(320 * 1024) + "end";
    assert.ok(cutParts(big).length > 3);
    assert.ok(cutParts(big).every((part) => part.byteLength <= PART_BYTES));
    const batch = await makeRun(kv, [{ custom_id: "a", body: { model: "m", content: big } }]);
    assert.equal(batch.total, 1);
    assert.ok(batch.bytes > 640 * 1024);
    const read = await readRequest(kv, batch.id, 0);
    assert.equal(read?.body.content, big);
    const claim = await claimRequest(kv, { batch: batch.id, index: 0, instance: "one", leaseMs: 1000, now: 2000 });
    assert.ok(claim);
    const line = anthropicLine("a", 200, { type: "message", content: [{ type: "text", text: big }] });
    assert.ok(await commitResult(kv, claim, { custom_id: "a", kind: "succeeded", line, expireIn: DAY }));
    const text = await new Response(resultStream(kv, { ...batch, state: "ended", end: "completed" }, "anthropic"))
      .text();
    assert.equal(text, `${line}\n`);
  });
});

Deno.test("a claimed request is not claimed again while its lease lives; once it lapses another instance takes it", async () => {
  await withKv(async (kv) => {
    const batch = await makeRun(kv, [{ custom_id: "a", body: { model: "m" } }]);
    const at = { batch: batch.id, index: 0, leaseMs: 1000 };
    const first = await claimRequest(kv, { ...at, instance: "one", now: 2000 });
    assert.ok(first);
    assert.equal(await claimRequest(kv, { ...at, instance: "two", now: 2500 }), undefined);
    assert.equal(await liveClaims(kv, batch.id, 2500), 1);
    // Renewed, the lease lives on past its first end.
    assert.ok(await renewClaim(kv, first, 1000, 2800));
    assert.equal(await claimRequest(kv, { ...at, instance: "two", now: 3500 }), undefined);
    // Not renewed again (its instance died): it lapses and another takes it.
    assert.equal(await liveClaims(kv, batch.id, 3900), 0);
    const second = await claimRequest(kv, { ...at, instance: "two", now: 3900 });
    assert.ok(second);
    // The first instance, back, has lost it: it can neither renew nor keep a result.
    assert.equal(await renewClaim(kv, first, 1000, 3950), false);
    const line = anthropicLine("a", 200, { type: "message" });
    assert.equal(await commitResult(kv, first, { custom_id: "a", kind: "succeeded", line, expireIn: DAY }), false);
    assert.ok(await commitResult(kv, second, { custom_id: "a", kind: "succeeded", line, expireIn: DAY }));
    assert.deepEqual(await countsOf(kv, batch.id), { succeeded: 1, errored: 0 });
    // Done, it is never claimed again, however late.
    assert.equal(await claimRequest(kv, { ...at, instance: "three", now: 99_000 }), undefined);
    assert.deepEqual(await unfinished(kv, batch.id, 1), []);
  });
});

Deno.test("two instances claiming the same requests at once get each one exactly once", async () => {
  await withKv(async (kv) => {
    const requests = Array.from({ length: 40 }, (_, i) => ({ custom_id: `r${i}`, body: { model: "m", i } }));
    const batch = await makeRun(kv, requests);
    const claimAll = (instance: string) =>
      Promise.all(
        requests.map((_, index) => claimRequest(kv, { batch: batch.id, index, instance, leaseMs: 5000, now: 2000 })),
      );
    const [one, two] = await Promise.all([claimAll("one"), claimAll("two")]);
    for (let index = 0; index < requests.length; index++) {
      assert.equal(Number(one[index] !== undefined) + Number(two[index] !== undefined), 1, `request ${index}`);
    }
  });
});

Deno.test("a released claim is free at once; results mark requests finished and count them by kind", async () => {
  await withKv(async (kv) => {
    const batch = await makeRun(kv, [
      { custom_id: "a", body: { model: "m" } },
      { custom_id: "b", body: { model: "m" } },
      { custom_id: "c", body: { model: "m" } },
    ]);
    const at = (index: number, instance: string) => ({ batch: batch.id, index, instance, leaseMs: 60_000, now: 2000 });
    const held = await claimRequest(kv, at(0, "one"));
    assert.ok(held);
    await releaseClaim(kv, held);
    const again = await claimRequest(kv, at(0, "two"));
    assert.ok(again);
    const error = { type: "error", error: { type: "invalid_request_error", message: "no" } };
    assert.ok(
      await commitResult(kv, again, {
        custom_id: "a",
        kind: "errored",
        line: anthropicLine("a", 400, error),
        expireIn: DAY,
      }),
    );
    const b = await claimRequest(kv, at(1, "two"));
    assert.ok(b);
    assert.ok(
      await commitResult(kv, b, {
        custom_id: "b",
        kind: "succeeded",
        line: anthropicLine("b", 200, { type: "message" }),
        expireIn: DAY,
      }),
    );
    assert.deepEqual(await countsOf(kv, batch.id), { succeeded: 1, errored: 1 });
    assert.deepEqual(await unfinished(kv, batch.id, 3), [2]);
    // Canceled with "c" never run: its line says so, and every request has one line.
    const ended = { ...batch, state: "ended" as const, end: "canceled" as const };
    const lines = (await new Response(resultStream(kv, ended, "anthropic")).text()).split("\n");
    assert.equal(lines.pop(), "");
    assert.deepEqual(lines.map((line) => JSON.parse(line).result.type), ["errored", "succeeded", "canceled"]);
  });
});

Deno.test("a batch is listed only for its token, newest first, until its results expire; deleting removes it all", async () => {
  await withKv(async (kv) => {
    const batch = await makeRun(kv, [{ custom_id: "a", body: { model: "m" } }], 1000);
    assert.deepEqual((await listRuns(kv, "tok_a", 2000)).map((b) => b.id), [batch.id]);
    assert.deepEqual(await listRuns(kv, "tok_b", 2000), []);
    assert.equal(await getRun(kv, batch.id, 1000 + 29 * DAY), null);
    assert.ok(await getRun(kv, batch.id, 2000));
    await deleteRun(kv, batch);
    assert.equal(await getRun(kv, batch.id, 2000), null);
    assert.equal(await readRequest(kv, batch.id, 0), undefined);
    assert.deepEqual([], await Array.fromAsync(kv.list({ prefix: ["gbatch_req"] })));
  });
});

Deno.test("results committed together land as one, and one whose claim was lost fails alone", async () => {
  await withKv(async (kv) => {
    const requests = Array.from({ length: 6 }, (_, i) => ({ custom_id: `r${i}`, body: { model: "m" } }));
    const batch = await makeRun(kv, requests);
    const claims = await Promise.all(
      requests.map((_, index) =>
        claimRequest(kv, { batch: batch.id, index, instance: "one", leaseMs: 1000, now: 2000 })
      ),
    );
    // Request 5's lease lapses and another instance takes it: its first claim can no longer keep a result.
    const taken = await claimRequest(kv, { batch: batch.id, index: 5, instance: "two", leaseMs: 1000, now: 9000 });
    assert.ok(taken);
    const committer = groupCommitter(kv);
    const kept = await Promise.all(claims.map((claim, index) =>
      commitAndClaim(
        kv,
        claim!,
        {
          custom_id: `r${index}`,
          kind: "succeeded",
          line: anthropicLine(`r${index}`, 200, { type: "message" }),
          expireIn: DAY,
        },
        undefined,
        committer,
      )
    ));
    assert.deepEqual(kept.map((landed) => landed.kept), [true, true, true, true, true, false]);
    assert.deepEqual(await countsOf(kv, batch.id), { succeeded: 5, errored: 0 });
    assert.deepEqual(await unfinished(kv, batch.id, 6), [5]);
  });
});

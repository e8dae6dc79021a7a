/**
 * @module Usage while the KV's file system is full or failing: Deno KV reports both as a TypeError, as it does a key
 * too large, yet nothing is wrong with the usage itself. Every answered request is recorded once the disk frees, with
 * one log line when the episode begins and one when it ends, and the entries waiting meanwhile on /metrics.
 */
import assert from "node:assert/strict";
import { requestLog, usageTotals } from "../../src/usage/query.ts";
import { flakyKv } from "../_flaky_kv.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";
import { anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

/** The value of the series `name` with `labels` on the gateway's /metrics, or undefined. */
async function metric(url: string, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return sampleValue(parsePrometheusText(await (await fetch(`${url}/metrics`)).text()), name, labels);
}

for (const fault of ["database or disk is full", "disk I/O error"]) {
  Deno.test(`usage answered while KV says "${fault}" is all recorded once the file recovers, nothing dropped`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
    const kv = await Deno.openKv(":memory:");
    const gw = await startGateway(upstream.url, { kv });
    try {
      const flaky = flakyKv(kv);
      const ask = async () => {
        const res = await gw.post("/v1/messages", messagesBody());
        assert.equal(res.status, 200);
        await res.body?.cancel();
      };
      await ask();
      flaky.failing = fault;
      // Five flushes while the disk stays full, a request answered before each.
      for (let i = 0; i < 5; i++) {
        await ask();
        await gw.flush();
      }
      assert.ok(flaky.refused >= 5);
      assert.deepEqual(await requestLog(kv, { limit: 10 }), []);
      assert.equal(await metric(gw.url, "modelgate_usage_entries_waiting"), 6);
      flaky.failing = undefined;
      await ask();
      await gw.flush();
      assert.equal((await requestLog(kv, { limit: 20 })).length, 7, "every answered request is in the log");
      const day = new Date().toISOString().slice(0, 10);
      const [byModel] = await usageTotals(kv, { by: "model", since: day, until: day });
      assert.deepEqual([byModel.requests, byModel.input_tokens], [7, 35]);
      // One line as the episode begins, one as it ends; each refused flush is still counted.
      const events = gw.logs.map((line) => line.event).filter((event) => /^(usage|kv_write)_/.test(`${event}`));
      assert.deepEqual(events, ["kv_write_gave_up", "usage_flush_deferred", "usage_flush_resumed"]);
      assert.deepEqual(
        gw.logs.filter((line) => line.event === "usage_flush_resumed").map((line) => line.refused_flushes),
        [5],
      );
      const giveUps = await metric(gw.url, "modelgate_kv_write_give_ups_total", { operation: "usage_flush" });
      assert.ok(giveUps !== undefined && giveUps >= 5, String(giveUps));
      assert.equal(await metric(gw.url, "modelgate_usage_entries_waiting"), 0);
    } finally {
      await gw[Symbol.asyncDispose]();
      kv.close();
    }
  });
}

/** @module createKvWriter(): bounded retries of a busy or contended KV, and a logged, counted give-up. */
import assert from "node:assert/strict";
import { createKvWriter, isBusy, isStoreFault, KvWriteFailed, RETRY } from "../../src/core/kv_write.ts";
import { GatewayError } from "../../src/core/errors.ts";

function writer(options: { busyTries?: number; contendedTries?: number } = {}) {
  const logs: Record<string, unknown>[] = [];
  const waits: number[] = [];
  const writes = createKvWriter({
    log: (line) => logs.push(line),
    sleep: (ms) => (waits.push(ms), Promise.resolve()),
    random: () => 0.999,
    ...options,
  });
  return { writes, logs, waits };
}

const locked = () => new TypeError("database is locked");

Deno.test("isBusy() tells SQLite's busy answers from other failures", () => {
  assert.equal(isBusy(new TypeError("database is locked")), true);
  assert.equal(isBusy(new Error("database table is locked")), true);
  assert.equal(isBusy(new Error("Value too large")), false);
  assert.equal(isBusy("database is locked"), false);
});

Deno.test("isStoreFault() tells a full or failing file from content KV refuses, both a TypeError from Deno KV", () => {
  for (const text of ["database or disk is full", "disk I/O error", "attempt to write a readonly database"]) {
    assert.equal(isStoreFault(new TypeError(text)), true, text);
  }
  for (const text of ["Key too large for write (max 2048 bytes)", "Value too large (max 65536 bytes)", "x"]) {
    assert.equal(isStoreFault(new TypeError(text)), false, text);
  }
});

Deno.test("createKvWriter() counts a quiet give-up without its log line", async () => {
  const { writes, logs } = writer();
  const full = () => Promise.reject(new TypeError("database or disk is full"));
  const err = await writes.write("usage_flush", full, { quiet: true }).catch((e) => e);
  assert.ok(err instanceof KvWriteFailed);
  assert.equal(err.reason, "failed");
  assert.deepEqual(logs, []);
  assert.deepEqual([...writes.giveUps()], [["usage_flush", 1]]);
});

Deno.test("createKvWriter() retries a busy database after growing, capped delays and returns the result", async () => {
  const { writes, logs, waits } = writer();
  let tries = 0;
  const result = await writes.write("op", () => ++tries < 8 ? Promise.reject(locked()) : Promise.resolve("done"));
  assert.equal(result, "done");
  assert.equal(tries, 8);
  assert.deepEqual(waits.map(Math.round), [4, 8, 16, 32, 64, 100, 100]);
  assert.deepEqual(logs, []);
  assert.equal(writes.giveUps().size, 0);
});

Deno.test("createKvWriter() gives up on a database that stays busy: one log line, one count, a 503", async () => {
  const { writes, logs, waits } = writer({ busyTries: 5 });
  const err = await writes.write("limit_reserve", () => Promise.reject(locked())).catch((e) => e);
  assert.ok(err instanceof KvWriteFailed);
  assert.equal(err.reason, "busy");
  assert.equal(err.status, 503);
  assert.equal(err.headers.get("retry-after"), "1");
  assert.equal(waits.length, 4);
  assert.deepEqual(logs.map((l) => [l.event, l.operation, l.reason, l.tries]), [
    ["kv_write_gave_up", "limit_reserve", "busy", 5],
  ]);
  assert.deepEqual([...writes.giveUps()], [["limit_reserve", 1]]);
});

Deno.test("createKvWriter() retries lost checks without waiting, and gives up after its bound", async () => {
  const { writes, logs, waits } = writer({ contendedTries: 10 });
  let tries = 0;
  assert.equal(await writes.write("op", () => Promise.resolve(++tries < 4 ? RETRY : tries)), 4);
  const err = await writes.write("token_update", () => Promise.resolve(RETRY)).catch((e) => e);
  assert.ok(err instanceof KvWriteFailed);
  assert.equal(err.reason, "contended");
  assert.deepEqual(waits, []);
  assert.equal(logs.length, 1);
  assert.deepEqual([...writes.giveUps()], [["token_update", 1]]);
});

Deno.test("createKvWriter() does not retry other failures, and passes a GatewayError through untouched", async () => {
  const { writes, logs } = writer();
  let tries = 0;
  const err = await writes.write("usage_flush", () => (tries++, Promise.reject(new RangeError("Value too large"))))
    .catch((e) => e);
  assert.ok(err instanceof KvWriteFailed);
  assert.equal(err.reason, "failed");
  assert.equal(tries, 1);
  assert.equal(logs[0].error, "RangeError", "only the error's class is logged");
  const own = new GatewayError("invalid_request", "No group", { status: 409 });
  assert.equal(await writes.write("group_create", () => Promise.reject(own)).catch((e) => e), own);
  assert.deepEqual([...writes.giveUps()], [["usage_flush", 1]]);
});

/**
 * @module Reading a stored conversation back, on KV alone: each stored turn read once, in a few round trips, with
 * bytes linear in the chain's length; the budget taken before anything is read; a conversation too large or too deep
 * refused before its records are read; and records kept in the older layout still read.
 */
import assert from "node:assert/strict";
import { resolveConversation, type ResolveOptions, storedRecord } from "../../src/conversations/resolve.ts";
import { jsonBytes } from "../../src/conversations/size.ts";
import { responseStore, type StoredResponse } from "../../src/conversations/store.ts";
import { GatewayError } from "../../src/core/errors.ts";

/** A KV that notes every key read (as `get` or `getMany`), the bytes of what it read, and each getMany call. */
function countingKv(kv: Deno.Kv) {
  const seen = { keys: [] as string[], bytes: 0, calls: 0, log: [] as string[] };
  const note = (entries: Deno.KvEntryMaybe<unknown>[]) => {
    for (const entry of entries) {
      seen.keys.push(JSON.stringify(entry.key));
      seen.log.push(`read ${JSON.stringify(entry.key)}`);
      const value = entry.value;
      seen.bytes += value instanceof Uint8Array ? value.byteLength : value === null ? 0 : JSON.stringify(value).length;
    }
  };
  const wrapped = new Proxy(kv, {
    get(target, prop) {
      if (prop === "getMany") {
        return async (keys: Deno.KvKey[]) => {
          seen.calls++;
          const entries = await target.getMany(keys);
          note(entries);
          return entries;
        };
      }
      if (prop === "get") {
        return async (key: Deno.KvKey) => {
          seen.calls++;
          const entry = await target.get(key);
          note([entry]);
          return entry;
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: wrapped, seen };
}

/** An id as long as the gateway's own. */
const idOf = (n: number) => `resp_${String(n).padStart(32, "0")}`;

function record(n: number, chain: string[], text = "x".repeat(100)): StoredResponse {
  const id = idOf(n);
  return {
    response: {
      id,
      object: "response",
      status: "completed",
      output: [{ id: `msg_${n}`, type: "message", role: "assistant", content: [{ type: "output_text", text }] }],
    },
    input: [{ id: `msg_${n}_in0`, type: "message", role: "user", content: [{ type: "input_text", text }] }],
    chain,
  };
}

/** Saves a chain of `depth` responses in `kv`; returns the last id. */
async function saveChain(kv: Deno.Kv, depth: number, text?: string): Promise<string> {
  const store = responseStore(kv, { days: 1, now: () => 0 });
  const chain: string[] = [];
  for (let n = 0; n < depth; n++) {
    await store.save("tok_a", record(n, [...chain], text));
    chain.push(idOf(n));
  }
  return chain.at(-1)!;
}

function options(kv: Deno.Kv, extra: Partial<ResolveOptions> = {}): ResolveOptions {
  return {
    token: "tok_a",
    store: responseStore(kv, { days: 1, now: () => 0 }),
    days: 1,
    size: 100,
    maxBytes: 10_000_000,
    maxTurns: 100,
    reserve: () => Promise.resolve(),
    ...extra,
  };
}

/** Resolves a continuation of a chain of `depth` turns; what was read for it. */
async function rebuild(depth: number) {
  using real = await Deno.openKv(":memory:");
  const last = await saveChain(real, depth);
  const { kv, seen } = countingKv(real);
  const body = { model: "m", previous_response_id: last, input: "Go on.", store: false };
  const whole = await resolveConversation(body, options(kv));
  assert.equal((whole.body.input as unknown[]).length, 2 * depth + 1);
  return seen;
}

Deno.test("resolveConversation() reads each stored turn of a chain once, in bytes linear in its length", async () => {
  const short = await rebuild(20);
  const long = await rebuild(40);
  for (const [depth, seen] of [[20, short], [40, long]] as const) {
    assert.equal(new Set(seen.keys).size, seen.keys.length, `no key is read twice: ${seen.keys}`);
    // The head and ids of the response continued, every earlier head, then every record (one chunk each).
    assert.equal(seen.keys.length, 2 + (depth - 1) + depth);
    assert.ok(seen.calls <= 1 + 2 * Math.ceil(depth / 10), `${seen.calls} getMany calls for ${depth} turns`);
  }
  // Twice the turns, twice the bytes: no turn carries the ids of all before it.
  assert.ok(long.bytes < 2.2 * short.bytes, `${short.bytes} bytes for 20 turns, ${long.bytes} for 40`);
});

Deno.test("resolveConversation() takes the budget before reading, and reads nothing of a chain too large or deep", async () => {
  using real = await Deno.openKv(":memory:");
  const last = await saveChain(real, 5, "y".repeat(5000));
  const { kv, seen } = countingKv(real);
  const body = { model: "m", previous_response_id: last, input: "Go on.", store: false };
  const reserve = (bytes: number) => (seen.log.push(`reserve ${bytes}`), Promise.resolve());
  const whole = await resolveConversation(body, options(kv, { reserve }));
  const chunks = seen.log.filter((line) => line.startsWith("read") && /,0\]$/.test(line));
  const reserved = seen.log.filter((line) => line.startsWith("reserve")).map((line) => Number(line.split(" ")[1]));
  assert.ok(
    seen.log.indexOf(`read ${JSON.stringify(["responses", "tok_a", idOf(0), 0])}`) >
      seen.log.indexOf(`reserve ${reserved[0]}`),
  );
  assert.equal(chunks.length, 5);
  const held = reserved.reduce((sum, bytes) => sum + bytes, 0);
  assert.ok(held >= 5 * 10_000, `${held} bytes reserved for five turns of 10 kB`);
  // The size told is about that of the body made whole.
  assert.ok(Math.abs(whole.size - jsonBytes(whole.body)) < 200, `${whole.size} vs ${jsonBytes(whole.body)}`);

  for (const limits of [{ maxBytes: 40_000 }, { maxTurns: 4 }]) {
    seen.log.length = 0;
    await assert.rejects(
      resolveConversation(body, options(kv, { ...limits, reserve })),
      (err) =>
        err instanceof GatewayError && err.param === "previous_response_id" &&
        err.status === 400 + ("maxBytes" in limits ? 13 : 0),
    );
    assert.deepEqual(seen.log.filter((line) => !/"resp_\d{32}"\]$|"chain"\]$/.test(line)), [], "only heads were read");
  }
});

Deno.test("resolveConversation() reads a chain kept in the older layout, its ids inside each record", async () => {
  using kv = await Deno.openKv(":memory:");
  const encoder = new TextEncoder();
  for (let n = 0; n < 3; n++) {
    const saved = record(n, Array.from({ length: n }, (_, i) => idOf(i)));
    const bytes = encoder.encode(JSON.stringify(saved));
    await kv.set(["responses", "tok_a", idOf(n), 0], bytes);
    await kv.set(["responses", "tok_a", idOf(n)], { chunks: 1, created_at: 0, expires_at: 86_400_000 });
  }
  const body = { model: "m", previous_response_id: idOf(2), input: "Go on.", store: false };
  const whole = await resolveConversation(body, options(kv));
  const ids = (whole.body.input as { id?: string }[]).map((item) => item.id);
  assert.deepEqual(ids, ["msg_0_in0", "msg_0", "msg_1_in0", "msg_1", "msg_2_in0", "msg_2", undefined]);
  const [loaded] = await responseStore(kv, { days: 1, now: () => 0 }).load("tok_a", [idOf(2)]);
  assert.deepEqual(loaded?.chain, [idOf(0), idOf(1)]);
});

Deno.test("resolveConversation() reads item references together, and none whose answers pass max_body_bytes", async () => {
  using real = await Deno.openKv(":memory:");
  const store = responseStore(real, { days: 1, now: () => 0 });
  for (let n = 0; n < 3; n++) await store.save("tok_a", record(n, [], "z".repeat(30_000)));
  const { kv, seen } = countingKv(real);
  const body = { model: "m", input: [0, 1, 2].map((n) => ({ type: "item_reference", id: `msg_${n}` })), store: false };
  const reserve = (bytes: number) => (seen.log.push(`reserve ${bytes}`), Promise.resolve());
  await assert.rejects(
    resolveConversation(body, options(kv, { maxBytes: 150_000, reserve })),
    (err) => err instanceof GatewayError && err.status === 413 && err.param === "input",
  );
  assert.deepEqual(seen.log.filter((line) => /,\d+\]$/.test(line)), [], "no chunk was read");
  seen.log.length = 0;
  seen.calls = 0;
  const whole = await resolveConversation(body, options(kv, { reserve }));
  assert.deepEqual((whole.body.input as { id: string }[]).map((item) => item.id), ["msg_0", "msg_1", "msg_2"]);
  // The index entries (which keep their responses' heads), then the answers: one getMany each, no head read alone.
  assert.equal(seen.calls, 2);
  assert.ok(!seen.keys.some((key) => /^\["responses","tok_a","resp_\d{32}"\]$/.test(key)), `${seen.keys}`);
  const reserveAt = seen.log.findIndex((line) => line.startsWith("reserve"));
  assert.ok(reserveAt !== -1 && reserveAt < seen.log.findIndex((line) => /,0\]$/.test(line)));
});

Deno.test("resolveConversation() reads no earlier head of a chain the gateway stored: two round trips, however deep", async () => {
  using real = await Deno.openKv(":memory:");
  const store = responseStore(real, { days: 1, now: () => 0 });
  // Each turn made as the gateway makes it: resolved from the one before, then kept with what was read.
  let previous: string | undefined;
  for (let n = 0; n < 6; n++) {
    const body = { model: "m", input: `Turn ${n}.`, ...previous ? { previous_response_id: previous } : {} };
    const { pending } = await resolveConversation(body, options(real));
    const id = idOf(n);
    await store.save("tok_a", storedRecord(pending!, { id, object: "response", status: "completed", output: [] }));
    previous = id;
  }
  const { kv, seen } = countingKv(real);
  const body = { model: "m", previous_response_id: previous, input: "Go on.", store: false };
  const whole = await resolveConversation(body, options(kv));
  assert.equal((whole.body.input as unknown[]).length, 7);
  const heads = seen.keys.filter((key) => /^\["responses","tok_a","resp_\d{32}"\]$/.test(key));
  assert.deepEqual(heads, [JSON.stringify(["responses", "tok_a", previous])], "only the continued response's head");
  // Its head and ids in one getMany, then the six records (one chunk each) in one round of getMany batches.
  assert.equal(seen.keys.length, 2 + 6);
});

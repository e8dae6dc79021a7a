/** @module Usage accounting: which exchanges are recorded, what each adds to the totals, and the sums a batch writes. */
import assert from "node:assert/strict";
import { sameSecret } from "../../src/access/auth.ts";
import type { Exchange } from "../../src/core/exchange.ts";
import { countersOf, toLogEntry } from "../../src/usage/log_entry.ts";
import { usageRecorder } from "../../src/usage/recorder.ts";

function exchange(extra: Partial<Exchange> = {}): Exchange {
  return {
    request_id: "req_1",
    started_at: Date.parse("2026-03-04T05:06:07Z"),
    method: "POST",
    route: "/v1/messages",
    protocol: "anthropic",
    token_id: "tok_1",
    group: "g",
    model: "m",
    stream: true,
    attempts: [],
    status: 200,
    usage: { input_tokens: 1, output_tokens: 2, cache_read_input_tokens: 3, cache_creation_input_tokens: 4 },
    usage_complete: true,
    ...extra,
  };
}

const RECORDED = [
  { name: "a model call by a token", exchange: exchange(), recorded: true },
  { name: "an unauthenticated request", exchange: exchange({ token_id: undefined }), recorded: false },
  { name: "a models listing", exchange: exchange({ model: undefined, route: "/v1/models" }), recorded: false },
  { name: "a token count", exchange: exchange({ route: "/v1/messages/count_tokens" }), recorded: false },
  {
    name: "a model call refused before its model was known",
    exchange: exchange({ model: undefined, route: "/v1/chat/completions", status: 400, error: "invalid_request" }),
    recorded: true,
  },
  {
    name: "a stored response read",
    exchange: exchange({ model: undefined, route: "/v1/responses/:id" }),
    recorded: false,
  },
];

for (const c of RECORDED) {
  Deno.test(`toLogEntry() ${c.recorded ? "records" : "skips"} ${c.name}`, () => {
    assert.equal(toLogEntry(c.exchange) !== undefined, c.recorded);
  });
}

const PRICE = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

const COUNTS = [
  {
    name: "a complete answer at a deployment without a price",
    exchange: exchange(),
    want: { requests: 1n, errors: 0n, incomplete: 0n, input_tokens: 1n, output_tokens: 2n, unpriced: 1n, cost: 0n },
  },
  {
    name: "a priced answer, in pico-units (1*3 + 2*15 + 3*0.3 + 4*3.75 = 48.9 per million)",
    exchange: exchange({ price: PRICE }),
    want: {
      requests: 1n,
      errors: 0n,
      incomplete: 0n,
      input_tokens: 1n,
      output_tokens: 2n,
      unpriced: 0n,
      cost: 48_900_000n,
    },
  },
  {
    name: "a cut stream",
    exchange: exchange({ usage_complete: false, error: "upstream" }),
    want: { requests: 1n, errors: 1n, incomplete: 1n, input_tokens: 1n, output_tokens: 2n, unpriced: 1n, cost: 0n },
  },
  {
    name: "a refused request",
    exchange: exchange({ status: 429, error: "rate_limit", usage: undefined, usage_complete: undefined }),
    want: { requests: 1n, errors: 1n, incomplete: 0n, input_tokens: 0n, output_tokens: 0n, unpriced: 0n, cost: 0n },
  },
];

for (const c of COUNTS) {
  Deno.test(`countersOf() counts ${c.name}`, () => {
    const got = countersOf(toLogEntry(c.exchange)!);
    assert.deepEqual(
      {
        requests: got.requests,
        errors: got.errors,
        incomplete: got.incomplete,
        input_tokens: got.input_tokens,
        output_tokens: got.output_tokens,
        unpriced: got.unpriced,
        cost: got.cost,
      },
      c.want,
    );
  });
}

Deno.test("toLogEntry() keeps the day, the session and no body text", () => {
  const entry = toLogEntry(exchange({ session_id: "s-1" }))!;
  assert.equal(entry.time, "2026-03-04T05:06:07.000Z");
  assert.equal(entry.session_id, "s-1");
  assert.equal(entry.cache_creation_input_tokens, 4);
});

const SECRETS = [
  { a: "admin-key", b: "admin-key", same: true },
  { a: "admin-key", b: "admin-kez", same: false },
  { a: "admin-key", b: "admin-key-longer", same: false },
  { a: "admin-key", b: "", same: false },
];

for (const c of SECRETS) {
  Deno.test(`sameSecret() says ${c.same} for "${c.a}" and "${c.b}"`, async () => {
    assert.equal(await sameSecret(c.a, c.b), c.same);
  });
}

Deno.test("usageRecorder() sums each dimension's counters per day over requests that share some names and not others", async () => {
  using kv = await Deno.openKv(":memory:");
  const recorder = usageRecorder(kv, { flushMs: 60_000, logDays: 1, log: (line) => assert.fail(JSON.stringify(line)) });
  const base = Date.parse("2026-03-04T23:59:59Z");
  const exchanges: Exchange[] = [];
  for (let i = 0; i < 24; i++) {
    exchanges.push({
      request_id: `req_${i}`,
      started_at: base + (i % 2) * 1000,
      method: "POST",
      route: "/v1/messages",
      protocol: "anthropic",
      token_id: `tok_${i % 3}`,
      group: i % 4 === 0 ? "a" : "b",
      model: `m${i % 2}`,
      session_id: i % 5 === 0 ? undefined : `s${i % 2}`,
      stream: false,
      attempts: [],
      status: i % 6 === 0 ? 500 : 200,
      // A garbled negative count adds nothing, as it never did.
      usage: {
        input_tokens: i === 7 ? -5 : i,
        output_tokens: 2,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
      usage_complete: true,
    });
  }
  for (const e of exchanges) recorder.finish!(e);
  await recorder.close();
  const expected = new Map<string, bigint>();
  for (const e of exchanges) {
    const entry = toLogEntry(e)!;
    const names = { token: entry.token_id, group: entry.group, model: entry.model, session: entry.session_id };
    for (const [counter, value] of Object.entries(countersOf(entry))) {
      if (value <= 0n) continue;
      for (const [dimension, name] of Object.entries(names)) {
        if (name === null) continue;
        const key = JSON.stringify(["usage", dimension, entry.time.slice(0, 10), name, counter]);
        expected.set(key, (expected.get(key) ?? 0n) + value);
      }
    }
  }
  const got = new Map<string, bigint>();
  for await (const { key, value } of kv.list<Deno.KvU64>({ prefix: ["usage"] })) {
    got.set(JSON.stringify(key), value.value);
  }
  assert.deepEqual(got, expected);
});

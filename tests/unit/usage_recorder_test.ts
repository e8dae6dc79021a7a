/** @module Pure parts of usage accounting: which exchanges are recorded and what each adds to the totals. */
import assert from "node:assert/strict";
import { sameSecret } from "../../src/access/auth.ts";
import type { Exchange } from "../../src/core/exchange.ts";
import { countersOf, toLogEntry } from "../../src/usage/recorder.ts";

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
];

for (const c of RECORDED) {
  Deno.test(`toLogEntry() ${c.recorded ? "records" : "skips"} ${c.name}`, () => {
    assert.equal(toLogEntry(c.exchange) !== undefined, c.recorded);
  });
}

const COUNTS = [
  {
    name: "a complete answer",
    exchange: exchange(),
    want: { requests: 1, errors: 0, incomplete: 0, input_tokens: 1, output_tokens: 2 },
  },
  {
    name: "a cut stream",
    exchange: exchange({ usage_complete: false, error: "upstream" }),
    want: { requests: 1, errors: 1, incomplete: 1, input_tokens: 1, output_tokens: 2 },
  },
  {
    name: "a refused request",
    exchange: exchange({ status: 429, error: "rate_limit", usage: undefined, usage_complete: undefined }),
    want: { requests: 1, errors: 1, incomplete: 0, input_tokens: 0, output_tokens: 0 },
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

/** @module The credential guard: a bucket of wrong attempts per address and kind, bounded, one log line per episode. */
import assert from "node:assert/strict";
import { type AuthGuard, createAuthGuard } from "../../src/access/guard.ts";
import { adminKeyFrom } from "../../src/access/operator.ts";
import { GatewayError } from "../../src/core/errors.ts";

const ALLOWANCES = {
  admin_key: { burst: 3, refillMs: 10_000 },
  token: { burst: 2, refillMs: 1_000 },
  sign_in: { burst: 2, refillMs: 1_000 },
  device: { burst: 2, refillMs: 1_000 },
  oauth_client: { burst: 2, refillMs: 1_000 },
};

function guard(options: { maxAddresses?: number } = {}) {
  let now = 0;
  const logs: Record<string, unknown>[] = [];
  const g = createAuthGuard({ now: () => now, log: (line) => logs.push(line), allowances: ALLOWANCES, ...options });
  return { g, logs, advance: (ms: number) => now += ms };
}

/** One wrong attempt as the guard sees it: "wrong" (let through, then charged) or its 429's retry-after. */
function wrong(g: AuthGuard, address: string, kind: "admin_key" | "token" = "admin_key"): string {
  try {
    g.attempt(kind, address).failed();
    return "wrong";
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 429);
    return `retry-after ${err.headers.get("retry-after")}`;
  }
}

Deno.test("attempt() lets the burst through, then refuses with the time until the next attempt", () => {
  const { g, advance } = guard();
  assert.deepEqual([1, 2, 3, 4].map(() => wrong(g, "203.0.113.1")), ["wrong", "wrong", "wrong", "retry-after 10"]);
  advance(4_000);
  assert.equal(wrong(g, "203.0.113.1"), "retry-after 6");
  advance(6_000);
  assert.equal(wrong(g, "203.0.113.1"), "wrong", "one attempt earned back");
  assert.equal(wrong(g, "203.0.113.1"), "retry-after 10");
  assert.deepEqual([...g.refusals()], [["admin_key", 3]]);
});

Deno.test("attempt() charges guesses sent together as a debt the address waits out in full", () => {
  const { g, advance } = guard();
  // Ten checks in flight at once all pass the gate; their failures leave the bucket 7 attempts overdrawn.
  const pending = Array.from({ length: 10 }, () => g.attempt("admin_key", "203.0.113.1"));
  for (const attempt of pending) attempt.failed();
  assert.equal(wrong(g, "203.0.113.1"), "retry-after 80");
  advance(79_000);
  assert.equal(wrong(g, "203.0.113.1"), "retry-after 1");
  advance(1_000);
  assert.equal(wrong(g, "203.0.113.1"), "wrong");
});

Deno.test("attempt() costs a right credential nothing: any number may be in flight from one address", () => {
  const { g } = guard();
  for (let i = 0; i < 1000; i++) g.attempt("token", "203.0.113.1");
  assert.equal(wrong(g, "203.0.113.1", "token"), "wrong");
  assert.equal(g.tracked("token"), 1, "only the address that sent a wrong credential is remembered");
});

Deno.test("attempt() slows only the guessing address and kind, never another address", () => {
  const { g } = guard();
  for (let i = 0; i < 10; i++) wrong(g, "203.0.113.1");
  assert.equal(wrong(g, "198.51.100.2"), "wrong");
  assert.equal(wrong(g, "203.0.113.1", "token"), "wrong", "wrong admin keys do not use up the token allowance");
  assert.equal(wrong(g, "2001:db8:1:2::1"), "wrong");
});

Deno.test("attempt() logs one line per address that starts being refused, not one per refusal", () => {
  const { g, logs, advance } = guard();
  for (let i = 0; i < 20; i++) wrong(g, "203.0.113.1");
  assert.deepEqual(logs, [{
    level: "warn",
    event: "auth_throttled",
    credential: "admin_key",
    client: "203.0.113.1",
    retry_after_s: 10,
  }]);
  advance(10_000);
  wrong(g, "203.0.113.1");
  wrong(g, "203.0.113.1");
  assert.equal(logs.length, 2, "a new episode after an allowed attempt logs again");
});

Deno.test("attempt() tracks a bounded number of addresses, and forgets one whose bucket is full again", () => {
  const { g } = guard({ maxAddresses: 100 });
  for (let i = 0; i < 1000; i++) wrong(g, `10.0.${i >> 8}.${i & 255}`);
  assert.equal(g.tracked("admin_key"), 100);
  // The newest guessers are the ones still held to their allowance.
  for (let i = 0; i < 3; i++) wrong(g, "10.0.3.231");
  assert.equal(wrong(g, "10.0.3.231"), "retry-after 10");
  const { g: fresh, advance } = guard();
  wrong(fresh, "203.0.113.9", "token");
  assert.equal(fresh.tracked("token"), 1);
  advance(1_000);
  fresh.attempt("token", "203.0.113.9");
  assert.equal(fresh.tracked("token"), 0, "a bucket full again is forgotten");
});

Deno.test("attempt() with the table full forgets a full bucket before the count of an address that has guessed", () => {
  const { g, advance } = guard({ maxAddresses: 2 });
  wrong(g, "203.0.113.1");
  wrong(g, "203.0.113.1");
  wrong(g, "198.51.100.1");
  // 198.51.100.1 has earned its attempt back (a full bucket, as if never seen); 203.0.113.1, tracked first, owes one.
  advance(10_000);
  wrong(g, "198.51.100.2");
  assert.equal(g.tracked("admin_key"), 2);
  assert.deepEqual([1, 2, 3].map(() => wrong(g, "203.0.113.1")), ["wrong", "wrong", "retry-after 10"]);
});

Deno.test("attempt() with the table full keeps an address in debt while a flood of new addresses comes and goes", () => {
  const { g } = guard({ maxAddresses: 100 });
  for (let i = 0; i < 10; i++) wrong(g, "203.0.113.1");
  for (let i = 0; i < 1000; i++) wrong(g, `10.0.${i >> 8}.${i & 255}`);
  assert.equal(g.tracked("admin_key"), 100);
  assert.match(wrong(g, "203.0.113.1"), /^retry-after \d+$/, "a flood of one-guess addresses does not reset a guesser");
});

Deno.test("attempt() caps a bucket's refill at the burst when the failure is charged after a slow check", () => {
  const { g, advance } = guard();
  for (let i = 0; i < 3; i++) wrong(g, "203.0.113.1");
  advance(10_000);
  // One attempt earned back lets a check through; it takes an hour (a slow provider) and then fails.
  const slow = g.attempt("admin_key", "203.0.113.1");
  advance(3_600_000);
  slow.failed();
  // The hour refilled the bucket to its burst and no further: the burst less the one charged, then a refusal.
  assert.deepEqual([1, 2, 3].map(() => wrong(g, "203.0.113.1")), ["wrong", "wrong", "retry-after 10"]);
});

Deno.test("adminKeyFrom() takes a key of 32 characters or more, none at all, and refuses a shorter one", () => {
  const env = (key: string) => (name: string) => name === "MODELGATE_ADMIN_KEY" ? key : undefined;
  assert.equal(adminKeyFrom(env("k".repeat(32))), "k".repeat(32));
  assert.equal(adminKeyFrom(env("")), undefined);
  assert.throws(() => adminKeyFrom(env("1")), /MODELGATE_ADMIN_KEY is 1 character long; it must be at least 32/);
  assert.throws(() => adminKeyFrom(env("k".repeat(31))), /31 characters long/);
});

Deno.test("attempt() remembers an IPv6 client by its /64 from its first wrong attempt, while no address is tracked", () => {
  const { g } = guard();
  // The first attempt finds nothing remembered: its address is keyed only when it fails.
  const first = g.attempt("admin_key", "2001:db8:1:2::1");
  assert.equal(g.tracked("admin_key"), 0);
  first.failed();
  assert.deepEqual([wrong(g, "2001:db8:1:2::2"), wrong(g, "[2001:db8:1:2::3]")], ["wrong", "wrong"]);
  assert.equal(wrong(g, "2001:db8:1:2:ffff::9"), "retry-after 10", "the same /64 shares one bucket");
  assert.equal(wrong(g, "2001:db8:1:3::1"), "wrong", "another /64 has its own");
  assert.equal(g.tracked("admin_key"), 2);
});

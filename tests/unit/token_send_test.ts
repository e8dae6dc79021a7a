/**
 * @module Sending with a cloud's access token: the waits for a first token and for a refused one's replacement share
 * one time budget, and a token that cannot be had is the upstream's failure, saying whether its grant was refused.
 */
import assert from "node:assert/strict";
import { cachedTokens, type IssuedToken, TokenFailure } from "../../src/providers/token_cache.ts";
import { sendWithToken, TokenUnavailable } from "../../src/providers/token_send.ts";

const HOUR = { lifetimeMs: 3_600_000 };

/** An upstream whose token exchanges are `exchanges`, in turn, on a clock the test moves. */
function upstreamWith(...exchanges: (() => Promise<IssuedToken>)[]) {
  const clock = { now: 0 };
  let calls = 0;
  const tokens = cachedTokens(() => exchanges[calls++](), () => clock.now);
  return { clock, upstream: { name: "cloud", tokens, log: () => {} }, exchanges: () => calls };
}

const CALL = { signal: new AbortController().signal, requestId: "req_1" };

Deno.test("sendWithToken(): a refused token's replacement is waited for only as long as the budget has left", async () => {
  // The replacement comes 20 ms after it is asked for: within a budget of its own, past what the first answer left.
  const later = () => new Promise<IssuedToken>((resolve) => setTimeout(() => resolve({ token: "t2", ...HOUR }), 20));
  const { clock, upstream } = upstreamWith(() => Promise.resolve({ token: "t1", ...HOUR }), later);
  const budget = { ms: 10_000, now: () => clock.now };
  const sent: string[] = [];
  const send = (token: string) => {
    sent.push(token);
    // The first answer takes the whole budget, and refuses the token.
    clock.now += 10_000;
    return Promise.resolve(new Response(null, { status: token === "t1" ? 401 : 200 }));
  };
  await assert.rejects(() => sendWithToken(upstream, CALL, send, budget), (err: Error) => {
    assert.ok(err instanceof TokenUnavailable);
    assert.equal(
      err.message,
      'Upstream "cloud" could not get an access token: The token endpoint did not answer in time',
    );
    assert.equal(err.refused, false);
    return true;
  });
  assert.deepEqual(sent, ["t1"]);
  // The exchange itself went on for whoever needs a token next.
  assert.equal(await upstream.tokens.token(), "t2");
});

Deno.test("sendWithToken(): a refused grant is the upstream's failure, marked refused; an unreachable endpoint is not", async () => {
  for (const refused of [true, false]) {
    const failure = new TokenFailure(
      refused ? "The token endpoint answered 401 (invalid_client)" : "unreachable",
      refused,
    );
    const { upstream, exchanges } = upstreamWith(() => Promise.reject(failure));
    const send = () => Promise.resolve(new Response(null));
    for (let i = 0; i < 3; i++) {
      await assert.rejects(() => sendWithToken(upstream, CALL, send), (err: Error) => {
        assert.ok(err instanceof TokenUnavailable);
        assert.equal(err.kind, "upstream");
        assert.equal(err.refused, refused);
        return true;
      });
    }
    assert.equal(exchanges(), 1, "a failed exchange stands for the calls after it");
  }
});

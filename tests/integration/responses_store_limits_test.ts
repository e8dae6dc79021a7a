/**
 * @module Stored conversations under the gateway's limits: what a continuation or a reference brings back from the
 * store counts against the in-flight body budget (503 with retry-after when it is full) and against max_body_bytes
 * (413 before any upstream call), and a chain deeper than responses_store.max_chain_turns is a 400.
 */
import assert from "node:assert/strict";
import { waitFor } from "../_helpers.ts";
import { outputOf, setup } from "../_responses.ts";
import { KINDS, scripted } from "../_scripted_turns.ts";

const { kind, model, path } = KINDS[1];
const CASE = { kind, model, path, stream: false };
/** Far past the 64 KiB that any request may hold without waiting. */
const BIG = "x".repeat(200_000);

Deno.test("continuations and references of a large stored response wait for the body budget, then get 503", async () => {
  // The answer is large too, so a reference to it weighs what a continuation does.
  await using s = await setup(CASE, [{ text: BIG }, { text: "Short." }], {
    // Room for one such conversation, not two.
    extraYaml: "max_inflight_body_bytes: 600000",
    // A wait for room ends at once: the test sees the 503 without spending the wait.
    sleep: () => Promise.resolve(true),
  });
  const first = await s.respond({ input: BIG });
  const answer = scripted(kind, [{ text: "Short." }]);
  const held: (() => void)[] = [];
  s.upstream.routes.set(path, (seen, req) => {
    if (held.length > 0) return answer(seen, req);
    return new Promise((resolve) => held.push(() => resolve(answer(seen, req))));
  });
  using _release = { [Symbol.dispose]: () => held.forEach((release) => release()) };
  // About 400 kB read back from the store, held while its upstream call is.
  const holding = s.respond({ previous_response_id: first.id, input: "Go on.", store: false });
  await waitFor(() => held.length === 1 || undefined);
  for (
    const [body, param] of [
      [{ previous_response_id: first.id, input: "Go on.", store: false }, "previous_response_id"],
      [{ input: [{ type: "item_reference", id: outputOf(first, "message").id }], store: false }, "input"],
    ] as const
  ) {
    const res = await s.gw.post("/v1/responses", { model, ...body }, { "x-api-key": s.token });
    assert.equal(res.status, 503, `${param}: ${await res.clone().text()}`);
    assert.equal(res.headers.get("retry-after"), "1");
    const { error } = await res.json();
    assert.equal(error.code, "service_unavailable");
    assert.match(error.message, /too many large requests/);
  }
  assert.equal(s.upstream.requests.length, 2, "neither refused request reached the upstream");
  // Reading it back whole weighs the same.
  for (const suffix of ["", "/input_items"]) {
    const got = await s.call("GET", `/v1/responses/${first.id}${suffix}`);
    assert.deepEqual([got.status, got.body.error?.code], [503, "service_unavailable"], `GET ${suffix}`);
  }
  held[0]();
  assert.equal((await holding).status, "completed");
  await waitFor(() => s.gw.deps.bodyBudget.inFlight() === 0 || undefined);
  const after = await s.respond({ previous_response_id: first.id, input: "Go on.", store: false });
  assert.equal(after.status, "completed", "the budget is given back when the continuation is over");
});

Deno.test("a continuation or a reference that would pass max_body_bytes is a 413, and the upstream is not called", async () => {
  await using s = await setup(CASE, [{ text: "y".repeat(40_000) }, { text: "Short." }], { maxBodyBytes: 100_000 });
  const first = await s.respond({ input: "z".repeat(40_000) });
  const second = await s.respond({ previous_response_id: first.id, input: "Go on." });
  const sent = s.upstream.requests.length;
  const continued = await s.refused({ previous_response_id: second.id, input: "w".repeat(30_000) });
  assert.equal(continued.status, 413);
  assert.equal(continued.error.param, "previous_response_id");
  assert.equal(continued.error.code, "request_too_large");
  assert.match(continued.error.message, /about 1\d{5} bytes, more than max_body_bytes \(100000\)/);
  const referenced = await s.refused({
    input: [{ role: "user", content: "w".repeat(70_000) }, {
      type: "item_reference",
      id: outputOf(first, "message").id,
    }],
  });
  assert.deepEqual([referenced.status, referenced.error.param], [413, "input"]);
  assert.match(referenced.error.message, /max_body_bytes \(100000\)/);
  assert.equal(s.upstream.requests.length, sent, "nothing over the limit was sent, nor retried");
  // Within the limit the same conversation goes on.
  const third = await s.respond({ previous_response_id: second.id, input: "w".repeat(10_000) });
  assert.equal(third.status, "completed");
});

Deno.test("a chain longer than responses_store.max_chain_turns is a 400 naming previous_response_id", async () => {
  await using s = await setup(CASE, [{ text: "Fine." }], { extraYaml: "responses_store: { max_chain_turns: 3 }" });
  let last = await s.respond({ input: "One." });
  for (const input of ["Two.", "Three."]) last = await s.respond({ previous_response_id: last.id, input });
  // Three stored responses are replayed: the limit itself.
  const fourth = await s.respond({ previous_response_id: last.id, input: "Four." });
  const sent = s.upstream.requests.length;
  const refused = await s.refused({ previous_response_id: fourth.id, input: "Five." });
  assert.deepEqual([refused.status, refused.error.param], [400, "previous_response_id"]);
  assert.match(refused.error.message, /4 stored responses.*max_chain_turns: 3.*send the conversation in input/);
  assert.equal(s.upstream.requests.length, sent);
});

/**
 * @module Stored Responses over real HTTP, on both upstream kinds, whole and streamed: continuing by
 * previous_response_id, item_reference to a message, a function call and reasoning, each token seeing only its own
 * responses, store: false, expiry, delete, input_items pages, and references that cannot be resolved.
 */
import assert from "node:assert/strict";
import {
  CASES,
  GET_TIME,
  type Json,
  outputOf,
  setup,
  storedKeys,
  systemSent,
  textOf,
  toolLoopSent,
  turnsSent,
} from "../_responses.ts";

for (const c of CASES) {
  Deno.test(`previous_response_id continues three turns with a function call (${c.label})`, async () => {
    await using s = await setup(c);
    const first = await s.respond({ instructions: "Be brief.", input: "What time is it?", tools: [GET_TIME] });
    const call = outputOf(first, "function_call");
    const second = await s.respond({
      instructions: "Answer in French.",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "12:00" }],
      tools: [GET_TIME],
    });
    const third = await s.respond({ previous_response_id: second.id, input: "Thanks!" });
    assert.equal(textOf(third), "You are welcome.");
    const sent = s.upstream.requests.map((r) => r.body!);
    assert.deepEqual(turnsSent(c.kind, sent[2]), [
      ...toolLoopSent(c.kind, "12:00"),
      "assistant: It is noon.",
      "user: Thanks!",
    ]);
    // Instructions belong to their own request: none carries over to the next.
    assert.deepEqual(sent.map((body) => systemSent(c.kind, body)), [["Be brief."], ["Answer in French."], []]);
  });

  Deno.test(`item_reference resolves a message, a function call and reasoning (${c.label})`, async () => {
    await using s = await setup(c);
    const first = await s.respond({ input: "What time is it?", tools: [GET_TIME] });
    const [reasoning, message, call] = ["reasoning", "message", "function_call"].map((t) => outputOf(first, t));
    const second = await s.respond({
      input: [
        { role: "user", content: "What time is it?" },
        { type: "item_reference", id: reasoning.id },
        { type: "item_reference", id: message.id },
        { type: "item_reference", id: call.id },
        { type: "function_call_output", call_id: call.call_id, output: "12:00" },
      ],
      tools: [GET_TIME],
    });
    assert.equal(textOf(second), "It is noon.");
    assert.deepEqual(turnsSent(c.kind, s.upstream.requests[1].body!), toolLoopSent(c.kind, "12:00"));
    // The second response was made from the items themselves, the reasoning with its summary and sealed state.
    const items = await s.call("GET", `/v1/responses/${second.id}/input_items?order=asc`);
    assert.deepEqual(items.body.data.slice(1, 4), [reasoning, message, call]);
  });

  Deno.test(`another token's response is not found (${c.label})`, async () => {
    await using s = await setup(c);
    const mine = await s.respond({ input: "What time is it?", tools: [GET_TIME] });
    const other = (await s.gw.store.createToken({ group: "oa" })).secret;
    for (const [method, path] of [["GET", ""], ["DELETE", ""], ["GET", "/input_items"]]) {
      const { status, body } = await s.call(method, `/v1/responses/${mine.id}${path}`, other);
      assert.equal(status, 404, `${method} ${path}`);
      assert.match(body.error.message, new RegExp(`Response with id '${mine.id}' not found`));
      assert.equal(body.error.code, "not_found");
    }
    const continued = await s.refused({ previous_response_id: mine.id, input: "Hi" }, other);
    assert.equal(continued.status, 400);
    assert.equal(continued.error.code, "previous_response_not_found");
    assert.equal(continued.error.param, "previous_response_id");
    const referenced = await s.refused(
      { input: [{ type: "item_reference", id: outputOf(mine, "message").id }] },
      other,
    );
    assert.equal(referenced.error.param, "input[0]");
    // The other token's DELETE deleted nothing.
    assert.deepEqual((await s.call("GET", `/v1/responses/${mine.id}`)).body, mine);
    assert.equal(s.upstream.requests.length, 1);
  });

  Deno.test(`store: false keeps nothing, so nothing can refer to it (${c.label})`, async () => {
    await using s = await setup(c);
    const unstored = await s.respond({ input: "What time is it?", tools: [GET_TIME], store: false });
    assert.deepEqual(await storedKeys(s.gw.store.kv, s.tokenId), []);
    assert.equal((await s.call("GET", `/v1/responses/${unstored.id}`)).status, 404);
    const continued = await s.refused({ previous_response_id: unstored.id, input: "Hi" });
    assert.equal(continued.error.code, "previous_response_not_found");
    const referenced = await s.refused({ input: [{ type: "item_reference", id: outputOf(unstored, "message").id }] });
    assert.equal(referenced.error.param, "input[0]");
    // A request with store: false may still continue a stored response; it adds nothing to the store itself.
    const stored = await s.respond({ input: "What time is it?" });
    const keys = await storedKeys(s.gw.store.kv, s.tokenId);
    await s.respond({ previous_response_id: stored.id, input: "And now?", store: false });
    assert.deepEqual(await storedKeys(s.gw.store.kv, s.tokenId), keys);
  });

  Deno.test(`a stored response expires after responses_store.days (${c.label})`, async () => {
    let now = Date.parse("2026-03-01T00:00:00Z");
    await using s = await setup(c, undefined, { now: () => new Date(now), extraYaml: "responses_store: { days: 2 }" });
    const first = await s.respond({ input: "What time is it?" });
    now += 2 * 86_400_000 - 1;
    assert.equal((await s.call("GET", `/v1/responses/${first.id}`)).status, 200);
    const second = await s.respond({ previous_response_id: first.id, input: "And now?" });
    now += 1;
    assert.equal((await s.call("GET", `/v1/responses/${first.id}`)).status, 404);
    const continued = await s.refused({ previous_response_id: first.id, input: "Hi" });
    assert.equal(continued.error.code, "previous_response_not_found");
    // A conversation lasts as long as its first response: the second one cannot be continued without it.
    const broken = await s.refused({ previous_response_id: second.id, input: "Hi" });
    assert.equal(broken.error.code, "previous_response_not_found");
    assert.match(broken.error.message, new RegExp(`continues '${first.id}', which has expired or was deleted`));
  });

  Deno.test(`DELETE /v1/responses/{id} removes the response and everything kept of it (${c.label})`, async () => {
    await using s = await setup(c);
    const kept = await s.respond({ input: "What time is it?" });
    const doomed = await s.respond({ input: "What time is it?", tools: [GET_TIME] });
    const before = await storedKeys(s.gw.store.kv, s.tokenId);
    const { status, body } = await s.call("DELETE", `/v1/responses/${doomed.id}`);
    assert.equal(status, 200);
    assert.deepEqual(body, { id: doomed.id, object: "response", deleted: true });
    assert.equal((await s.call("GET", `/v1/responses/${doomed.id}`)).status, 404);
    assert.equal((await s.call("DELETE", `/v1/responses/${doomed.id}`)).status, 404);
    const referenced = await s.refused({ input: [{ type: "item_reference", id: outputOf(doomed, "message").id }] });
    assert.equal(referenced.error.param, "input[0]");
    const left = await storedKeys(s.gw.store.kv, s.tokenId);
    assert.ok(left.length > 0 && left.length < before.length);
    assert.ok(left.every((key) => !JSON.stringify(key).includes(doomed.id.slice(5))), "no key names it or its items");
    assert.equal((await s.call("GET", `/v1/responses/${kept.id}`)).status, 200);
  });

  Deno.test(`deleting a response in a chain takes its items out of every continuation (${c.label})`, async () => {
    await using s = await setup(c);
    const first = await s.respond({ input: "What time is it?" });
    const second = await s.respond({ previous_response_id: first.id, input: "And now?" });
    const third = await s.respond({ previous_response_id: second.id, input: "Thanks!" });
    const listed = async () => {
      const { status, body } = await s.call("GET", `/v1/responses/${third.id}/input_items?order=asc&limit=100`);
      assert.equal(status, 200);
      return body.data.map((i: Json) => i.id);
    };
    const whole: string[] = await listed();
    assert.equal((await s.call("DELETE", `/v1/responses/${second.id}`)).status, 200);
    // The continuation is still the caller's: it reads as before, and lists what is still kept of its conversation.
    assert.deepEqual((await s.call("GET", `/v1/responses/${third.id}`)).body, third);
    const secondItems = new Set([...second.output.map((i: Json) => i.id), whole.at(-1 - second.output.length - 1)]);
    assert.equal(secondItems.size, second.output.length + 1);
    assert.deepEqual(await listed(), whole.filter((id) => !secondItems.has(id)));
    // What the deleted response said cannot be sent again, so the conversation cannot go on from it.
    const continued = await s.refused({ previous_response_id: third.id, input: "Bye" });
    assert.equal(continued.error.code, "previous_response_not_found");
    assert.match(continued.error.message, new RegExp(`continues '${second.id}', which has expired or was deleted`));
  });

  Deno.test(`input_items lists what a response was made from, a page at a time (${c.label})`, async () => {
    await using s = await setup(c);
    const first = await s.respond({ input: "What time is it?", tools: [GET_TIME] });
    const call = outputOf(first, "function_call");
    const second = await s.respond({
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "12:00" }],
    });
    const third = await s.respond({ previous_response_id: second.id, input: "Thanks!" });
    const all = (await s.call("GET", `/v1/responses/${third.id}/input_items?order=asc&limit=100`)).body;
    assert.deepEqual(all.data.map((i: Json) => i.type), [
      "message",
      "reasoning",
      "message",
      "function_call",
      "function_call_output",
      "message",
      "message",
    ]);
    assert.deepEqual(all.data[0].content, [{ type: "input_text", text: "What time is it?" }]);
    assert.deepEqual(all.data.slice(1, 4), first.output);
    assert.equal(all.data[6].content[0].text, "Thanks!");
    const ids: string[] = all.data.map((i: Json) => i.id);
    assert.equal(new Set(ids).size, 7, "every item has its own id");
    // Newest first by default, 20 at most.
    const page = (q: string) => s.call("GET", `/v1/responses/${third.id}/input_items?${q}`).then((r) => r.body);
    assert.deepEqual((await page("")).data.map((i: Json) => i.id), [...ids].reverse());
    const one = await page("order=asc&limit=3");
    assert.deepEqual([one.data.map((i: Json) => i.id), one.first_id, one.last_id, one.has_more], [
      ids.slice(0, 3),
      ids[0],
      ids[2],
      true,
    ]);
    const two = await page(`order=asc&limit=3&after=${one.last_id}`);
    assert.deepEqual([two.data.map((i: Json) => i.id), two.has_more], [ids.slice(3, 6), true]);
    const last = await page(`order=asc&limit=3&after=${two.last_id}`);
    assert.deepEqual([last.data.map((i: Json) => i.id), last.has_more], [ids.slice(6), false]);
    const back = await page(`order=asc&limit=2&before=${ids[5]}`);
    assert.deepEqual([back.data.map((i: Json) => i.id), back.has_more], [ids.slice(3, 5), true]);
    for (
      const [query, param] of [["limit=0", "limit"], ["limit=101", "limit"], ["order=up", "order"], [
        "after=x",
        "after",
      ]]
    ) {
      const refused = await s.call("GET", `/v1/responses/${third.id}/input_items?${query}`);
      assert.equal(refused.status, 400, query);
      assert.equal(refused.body.error.param, param);
    }
  });

  Deno.test(`a reference the gateway cannot resolve is a 400 naming the item (${c.label})`, async () => {
    await using s = await setup(c);
    const first = await s.respond({ input: "What time is it?" });
    const unknown = await s.refused({
      input: [
        { role: "user", content: "Hi" },
        { type: "item_reference", id: outputOf(first, "message").id },
        { type: "item_reference", id: "msg_never_made" },
      ],
    });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.error.param, "input[2]");
    assert.match(unknown.error.message, /msg_never_made.*send the item itself instead of a reference/);
    const noId = await s.refused({ input: [{ type: "item_reference" }] });
    assert.equal(noId.error.param, "input[0].id");
    const duplicate = await s.refused({
      previous_response_id: first.id,
      input: [{ type: "item_reference", id: outputOf(first, "message").id }],
    });
    assert.equal(duplicate.error.param, "input[0]");
    assert.match(duplicate.error.message, /Duplicate item found/);
    const missing = await s.refused({ previous_response_id: "resp_missing", input: "Hi" });
    assert.deepEqual([missing.status, missing.error.param, missing.error.code], [
      400,
      "previous_response_id",
      "previous_response_not_found",
    ]);
    assert.match(missing.error.message, /send the whole conversation in input instead/);
    const conversation = await s.refused({ conversation: "conv_1", input: "Hi" });
    assert.deepEqual([conversation.status, conversation.error.param], [400, "conversation"]);
    assert.equal(s.upstream.requests.length, 1, "nothing refused reached the upstream");
  });
}

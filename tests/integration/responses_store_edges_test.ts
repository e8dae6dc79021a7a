/**
 * @module Stored Responses at their edges, on both upstream kinds: a gateway that keeps nothing, a conversation
 * larger than one KV value, streams that fail, are cut or are left (nothing kept), an answer held back until it is
 * stored, and limits that count what was prepended.
 */
import assert from "node:assert/strict";
import { controlledStream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { fixture, readSse, waitFor, within } from "../_helpers.ts";
import { CASES, type Json, outputOf, setup, storedKeys, textOf, turnsSent } from "../_responses.ts";
import { KINDS } from "../_scripted_turns.ts";

/** A KV whose atomic commits wait `delay.ms` first, as a busy or distant KV does. */
function slowCommits(kv: Deno.Kv, delay: { ms: number }): Deno.Kv {
  const wrapOp = (op: Deno.AtomicOperation): Deno.AtomicOperation => {
    const proxy: Deno.AtomicOperation = new Proxy(op, {
      get(target, prop) {
        if (prop === "commit") {
          return async () => {
            if (delay.ms > 0) await new Promise((resolve) => setTimeout(resolve, delay.ms));
            return await target.commit();
          };
        }
        const value = Reflect.get(target, prop);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          return result === target ? proxy : result;
        };
      },
    });
    return proxy;
  };
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "atomic") return () => wrapOp(target.atomic());
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

for (const c of CASES) {
  Deno.test(`with responses_store off nothing is kept, and a reference says so (${c.label})`, async () => {
    await using s = await setup(c, undefined, { extraYaml: "responses_store: { enabled: false }" });
    const first = await s.respond({ input: "What time is it?" });
    assert.equal(textOf(first), "Let me check.");
    assert.deepEqual(await storedKeys(s.gw.store.kv, s.tokenId), []);
    const got = await s.call("GET", `/v1/responses/${first.id}`);
    assert.equal(got.status, 404);
    assert.match(got.body.error.message, /does not keep responses/);
    const continued = await s.refused({ previous_response_id: first.id, input: "Hi" });
    assert.deepEqual([continued.status, continued.error.param], [400, "previous_response_id"]);
    assert.match(continued.error.message, /this gateway does not keep responses.*send the whole conversation in input/);
    const referenced = await s.refused({
      input: [{ role: "user", content: "Hi" }, { type: "item_reference", id: outputOf(first, "message").id }],
    });
    assert.deepEqual([referenced.status, referenced.error.param], [400, "input[1]"]);
    assert.match(referenced.error.message, /does not keep responses.*send the item itself/);
  });

  Deno.test(`a conversation larger than a KV value is split across keys (${c.label})`, async () => {
    await using s = await setup(c);
    const big = "Héllo wörld 🌍 ".repeat(20_000);
    const first = await s.respond({ input: big });
    const chunks = (await storedKeys(s.gw.store.kv, s.tokenId)).filter((key) => key.length === 4);
    assert.ok(chunks.length >= 5, `${chunks.length} chunks`);
    const items = (await s.call("GET", `/v1/responses/${first.id}/input_items`)).body;
    assert.equal(items.data[0].content[0].text, big);
    await s.respond({ previous_response_id: first.id, input: "Shorter, please." });
    assert.equal(turnsSent(c.kind, s.upstream.requests[1].body!)[0], `user: ${big}`);
  });

  Deno.test(`responses made under one client x-request-id keep apart (${c.label})`, async () => {
    await using s = await setup(c);
    const same = { "x-request-id": "client-chosen-id" };
    const first = await s.respond({ input: "What time is it?" }, undefined, same);
    const second = await s.respond({ previous_response_id: first.id, input: "And now?" }, undefined, same);
    assert.notEqual(first.id, second.id);
    assert.notEqual(outputOf(first, "message").id, outputOf(second, "message").id);
    await s.respond({ previous_response_id: second.id, input: "Thanks!" }, undefined, same);
    assert.deepEqual(turnsSent(c.kind, s.upstream.requests[2].body!).filter((t) => t.startsWith("user")), [
      "user: What time is it?",
      "user: And now?",
      "user: Thanks!",
    ]);
  });

  Deno.test(`an answer reaches its client only once it is stored (${c.label})`, async () => {
    const delay = { ms: 0 };
    const kv = slowCommits(await Deno.openKv(":memory:"), delay);
    try {
      await using s = await setup(c, undefined, { kv });
      delay.ms = 50;
      const first = await s.respond({ input: "What time is it?" });
      // The client may refer to it at once, as the SDKs' tool loops do.
      assert.equal((await s.call("GET", `/v1/responses/${first.id}`)).status, 200);
      const second = await s.respond({ previous_response_id: first.id, input: "And now?" });
      assert.equal(textOf(second), "It is noon.");
    } finally {
      kv.close();
    }
  });
}

for (const { kind, model, path } of KINDS) {
  const upstreamName = kind === "anthropic" ? "anthropic" : "openai-chat";

  Deno.test(`a stream that is cut or fails keeps nothing (${kind} upstream)`, async () => {
    for (const name of ["cut.sse", "error_mid.sse"]) {
      await using s = await setup({ kind, model, path, stream: true });
      s.upstream.routes.set(path, () => sseReply(fixture(`${upstreamName}/${name}`)));
      const res = await s.gw.post("/v1/responses", { model, input: "Hi", stream: true }, { "x-api-key": s.token });
      const events = (await within(readSse(res), 5000, "the stream")).map((m) => JSON.parse(m.data));
      const failed = events.find((e) => e.type === "response.failed");
      assert.ok(failed, `${name}: the client is told`);
      assert.deepEqual(await storedKeys(s.gw.store.kv, s.tokenId), [], name);
      assert.equal((await s.call("GET", `/v1/responses/${failed.response.id}`)).status, 404);
    }
  });

  Deno.test(`a stream the client leaves keeps nothing (${kind} upstream)`, async () => {
    await using s = await setup({ kind, model, path, stream: true });
    const upstream = controlledStream();
    s.upstream.routes.set(path, () => upstream.response);
    const pending = s.gw.post("/v1/responses", { model, input: "Hi", stream: true }, { "x-api-key": s.token });
    await waitFor(() => s.upstream.requests[0]);
    // The answer starts (the gateway waits for its first chunk), then the client goes away.
    upstream.send(fixture(`${upstreamName}/text.sse`).split("\n\n").slice(0, 3).join("\n\n") + "\n\n");
    const reader = (await within(pending, 5000, "the answer")).body!.getReader();
    try {
      await within(reader.read(), 5000, "the first events");
    } finally {
      await reader.cancel();
    }
    await within(s.upstream.requests[0].closed, 5000, "the upstream call's end");
    await waitFor(() => s.gw.exchanges[0]);
    assert.deepEqual(await storedKeys(s.gw.store.kv, s.tokenId), []);
  });

  Deno.test(`a failed whole answer keeps nothing (${kind} upstream)`, async () => {
    await using s = await setup({ kind, model, path, stream: false });
    s.upstream.routes.set(path, () => jsonReply({ error: { type: "invalid_request_error", message: "No" } }, 400));
    const refused = await s.refused({ input: "Hi" });
    assert.equal(refused.status, 400);
    assert.deepEqual(await storedKeys(s.gw.store.kv, s.tokenId), []);
  });

  Deno.test(`limits and usage count the conversation prepended from the store (${kind} upstream)`, async () => {
    const now = () => new Date("2026-03-01T00:00:30Z");
    await using s = await setup({ kind, model, path, stream: false }, undefined, { now });
    const long = await s.respond({ input: "word ".repeat(2000) });
    // Limits from here on: the first request below fits in the idle window, the continuation cannot.
    await s.gw.store.updateToken(s.tokenId, { limits: { tokens_per_minute: 1000 } });
    await s.gw.deps.operator.credentials.refreshed();
    await s.respond({ input: "Hi" });
    await s.gw.deps.operator.limiter.settled();
    const refused = await s.refused({ previous_response_id: long.id, input: "Go on" });
    assert.equal(refused.status, 429);
    const [, asked] = /may use up to (\d+)/.exec(refused.error.message) ?? [];
    assert.ok(Number(asked) >= 2500, `the estimate counts the prepended text: ${refused.error.message}`);
    // What the upstream reports for a continuation covers all it was sent, and is what the usage records.
    await s.gw.store.updateToken(s.tokenId, { limits: undefined });
    await s.gw.deps.operator.credentials.refreshed();
    await s.respond({ previous_response_id: long.id, input: "Go on" });
    const sent: Json = s.upstream.requests.at(-1)!.body!;
    const exchange = await waitFor(() => s.gw.exchanges.findLast((e) => e.status === 200));
    assert.equal(exchange.usage?.input_tokens, Math.ceil(JSON.stringify(sent.messages).length / 4));
    assert.ok(exchange.usage!.input_tokens > 2500);
  });
}

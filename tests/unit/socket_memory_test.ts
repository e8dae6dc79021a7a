/** @module The connection-local memory of a Responses socket: one response per stream, bounded, oldest let go first. */
import assert from "node:assert/strict";
import { continueFrom, rememberedAfter, socketMemory } from "../../src/conversations/socket_memory.ts";

const item = (text: string) => ({ type: "message", role: "user", content: text });

/** An entry of `size` characters of text on `stream`. */
function entry(id: string, stream: string, size: number) {
  return rememberedAfter({ id, stream }, { own: [item("x".repeat(size))], output: [] });
}

Deno.test("socketMemory() keeps only the last response of each stream", () => {
  const memory = socketMemory(10_000);
  memory.remember(entry("resp_a1", "a", 10));
  memory.remember(entry("resp_b1", "b", 10));
  memory.remember(entry("resp_a2", "a", 10));
  assert.equal(memory.recall("resp_a1"), undefined);
  assert.ok(memory.recall("resp_a2"));
  assert.ok(memory.recall("resp_b1"), "another stream's last response stays, for a fork");
});

Deno.test("socketMemory() lets the oldest stream's response go when the bound is passed", () => {
  const memory = socketMemory(300);
  memory.remember(entry("resp_1", "a", 100));
  memory.remember(entry("resp_2", "b", 100));
  memory.remember(entry("resp_3", "c", 100));
  assert.equal(memory.recall("resp_1"), undefined);
  assert.ok(memory.recall("resp_2") && memory.recall("resp_3"));
  assert.ok(memory.bytes() <= 300);
});

Deno.test("socketMemory() keeps nothing of a response larger than its bound on its own", () => {
  const memory = socketMemory(100);
  memory.remember(entry("resp_small", "a", 10));
  assert.equal(memory.remember(entry("resp_big", "a", 500)), false);
  assert.equal(memory.recall("resp_big"), undefined);
  assert.equal(memory.recall("resp_small"), undefined, "it replaced the stream's last response");
  assert.equal(memory.bytes(), 0);
});

Deno.test("rememberedAfter() counts a continued conversation's size from its parts, as its JSON text", () => {
  const first = rememberedAfter({ id: "resp_1", stream: "" }, { own: [item("hi")], output: [item("hello")] });
  const second = rememberedAfter({ id: "resp_2", stream: "" }, { from: first, own: [item("more")], output: [] });
  assert.equal(first.bytes, JSON.stringify([item("hi")]).length + JSON.stringify([item("hello")]).length);
  assert.deepEqual(second.items, [item("hi"), item("hello"), item("more")]);
  assert.equal(second.bytes, first.bytes + JSON.stringify([item("more")]).length + 2);
});

Deno.test("continueFrom() puts the remembered conversation before the turn's input and keeps a stored ancestor", () => {
  const from = { ...entry("resp_1", "", 2), previous: "resp_stored" };
  const body = continueFrom({ model: "m", input: "next", previous_response_id: "resp_1" }, from);
  assert.deepEqual(body.input, [...from.items, item("next")]);
  assert.equal(body.previous_response_id, "resp_stored");
  const fresh = continueFrom({ model: "m", input: [item("x")], previous_response_id: "resp_1" }, entry("r", "", 1));
  assert.equal("previous_response_id" in fresh, false);
});

/**
 * @module The connection-local memory of a Responses socket: one response per stream, bounded per socket and over the
 * process's pool, oldest let go first, counted in the bytes its text holds, and a response not kept named with why.
 */
import assert from "node:assert/strict";
import { memoryPool } from "../../src/conversations/memory_pool.ts";
import { continuedBody, rememberedAfter, socketMemory } from "../../src/conversations/socket_memory.ts";

const item = (text: string) => ({ type: "message", role: "user", content: text });

/** An entry of `size` characters of text on `stream`. */
function entry(id: string, stream: string, size: number) {
  return rememberedAfter({ id, stream }, { own: [item("x".repeat(size))], output: [] });
}

const roomy = () => memoryPool(1 << 30);

Deno.test("socketMemory() keeps only the last response of each stream", () => {
  const memory = socketMemory(10_000, roomy());
  memory.remember(entry("resp_a1", "a", 10));
  memory.remember(entry("resp_b1", "b", 10));
  memory.remember(entry("resp_a2", "a", 10));
  assert.equal(memory.recall("resp_a1"), undefined);
  assert.ok(memory.recall("resp_a2"));
  assert.ok(memory.recall("resp_b1"), "another stream's last response stays, for a fork");
});

Deno.test("socketMemory() lets the oldest stream's response go when the bound is passed, and says why", () => {
  const memory = socketMemory(300, roomy());
  memory.remember(entry("resp_1", "a", 100));
  memory.remember(entry("resp_2", "b", 100));
  memory.remember(entry("resp_3", "c", 100));
  assert.equal(memory.recall("resp_1"), undefined);
  assert.match(memory.forgotten("resp_1")!, /responses_socket\.memory_bytes \(300\)/);
  assert.ok(memory.recall("resp_2") && memory.recall("resp_3"));
  assert.ok(memory.bytes() <= 300);
});

Deno.test("socketMemory() keeps nothing of a response larger than its bound on its own", () => {
  const memory = socketMemory(100, roomy());
  memory.remember(entry("resp_small", "a", 10));
  assert.equal(memory.remember(entry("resp_big", "a", 500)), false);
  assert.equal(memory.recall("resp_big"), undefined);
  assert.match(memory.forgotten("resp_big")!, /alone is larger than responses_socket\.memory_bytes/);
  assert.equal(memory.recall("resp_small"), undefined, "it replaced the stream's last response");
  assert.equal(memory.bytes(), 0);
});

Deno.test("sockets share the process's pool: a full pool lets a socket's own oldest go, then keeps nothing", () => {
  const size = entry("resp_0", "a", 100).bytes;
  const pool = memoryPool(Math.floor(2.5 * size));
  const one = socketMemory(10_000, pool);
  const two = socketMemory(10_000, pool);
  assert.ok(one.remember(entry("resp_1", "a", 100)));
  assert.ok(two.remember(entry("resp_2", "a", 100)));
  assert.equal(pool.held(), 2 * size);
  // The second socket has room in its own bound but not in the pool: it gives up its own oldest first.
  assert.ok(two.remember(entry("resp_3", "b", 100)));
  assert.equal(two.recall("resp_2"), undefined);
  assert.ok(one.recall("resp_1"), "another socket's response is not taken from it");
  // With nothing of its own left to give up, a socket keeps nothing more, and names the pool's bound.
  const three = socketMemory(10_000, pool);
  assert.equal(three.remember(entry("resp_4", "a", 100)), false);
  assert.match(three.forgotten("resp_4")!, new RegExp(`total_memory_bytes, ${pool.limit}`));
  one.clear();
  two.clear();
  assert.equal(pool.held(), 0, "a socket that is done gives its bytes back");
  assert.equal(two.remember(entry("resp_late", "a", 10)), false, "and keeps nothing that ends after it");
  assert.equal(pool.held(), 0);
  assert.ok(three.remember(entry("resp_5", "a", 100)));
});

Deno.test("rememberedAfter() counts the bytes its text holds: one a character, two once any is past Latin-1", () => {
  const first = rememberedAfter({ id: "resp_1", stream: "" }, { own: [item("hi")], output: [item("hello")] });
  const second = rememberedAfter({ id: "resp_2", stream: "" }, { from: first, own: [item("more")], output: [] });
  assert.deepEqual(JSON.parse(`[${second.items}]`), [item("hi"), item("hello"), item("more")]);
  assert.equal(first.bytes, first.items.length);
  assert.equal(second.bytes, second.items.length);
  const wide = rememberedAfter({ id: "resp_3", stream: "" }, { from: second, own: [item("日本")], output: [] });
  assert.equal(wide.bytes, wide.items.length * 2, "the runtime keeps the whole text two bytes a character");
  const after = rememberedAfter({ id: "resp_4", stream: "" }, { from: wide, own: [item("ascii")], output: [] });
  assert.equal(after.bytes, after.items.length * 2);
});

Deno.test("rememberedAfter() keeps no compaction trigger and no empty part", () => {
  const kept = rememberedAfter({ id: "resp_1", stream: "" }, {
    own: [item("hi"), { type: "compaction_trigger" }],
    output: [],
  });
  assert.deepEqual(JSON.parse(`[${kept.items}]`), [item("hi")]);
});

Deno.test("continuedBody() puts the remembered conversation before the turn's input and keeps a stored ancestor", () => {
  const from = { ...entry("resp_1", "", 2), previous: "resp_stored" };
  const body = JSON.parse(continuedBody({ model: "m", input: "next", previous_response_id: "resp_1" }, from));
  assert.deepEqual(body.input, [item("xx"), item("next")]);
  assert.equal(body.previous_response_id, "resp_stored");
  assert.equal(body.model, "m");
  const fresh = JSON.parse(
    continuedBody({ model: "m", input: [item("x")], previous_response_id: "resp_1" }, entry("r", "", 1)),
  );
  assert.equal("previous_response_id" in fresh, false);
  assert.deepEqual(JSON.parse(continuedBody({}, entry("r", "", 1))), { input: [item("x")] });
});

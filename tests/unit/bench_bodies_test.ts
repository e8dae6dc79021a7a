/** @module The memory benchmarks' flags (large bodies, stored conversations) and the large bodies. */
import assert from "node:assert/strict";
import { largeBody, parseBodiesArgs } from "../../bench/bodies.ts";
import { parseConversationArgs } from "../../bench/conversations.ts";

Deno.test("parseBodiesArgs() reads the flags and names a bad one", () => {
  assert.deepEqual(parseBodiesArgs([]), { sizeMb: 20, count: 10, rounds: 3, answerMb: 50 });
  assert.deepEqual(parseBodiesArgs(["--size", "5", "--count", "11", "--rounds", "1", "--answer", "8"]), {
    sizeMb: 5,
    count: 11,
    rounds: 1,
    answerMb: 8,
  });
  // Either part can be left out.
  assert.deepEqual(parseBodiesArgs(["--count", "0", "--answer", "0"]), {
    sizeMb: 20,
    count: 0,
    rounds: 3,
    answerMb: 0,
  });
  assert.equal(parseBodiesArgs(["--help"]), undefined);
  assert.throws(() => parseBodiesArgs(["--size", "0"]), /Cannot read "--size 0"/);
  assert.throws(() => parseBodiesArgs(["--rounds", "0"]), /Cannot read "--rounds 0"/);
  assert.throws(() => parseBodiesArgs(["--sise", "5"]), /Cannot read "--sise 5"/);
});

Deno.test("parseConversationArgs() reads the flags and keeps a chain within 20 to 1000 turns", () => {
  assert.deepEqual(parseConversationArgs([]), { sizeMb: 20, count: 30, chain: 1000 });
  assert.deepEqual(parseConversationArgs(["--size", "2", "--chain", "50"]), { sizeMb: 2, count: 30, chain: 50 });
  assert.equal(parseConversationArgs(["-h"]), undefined);
  assert.throws(() => parseConversationArgs(["--chain", "1001"]), /Cannot read "--chain 1001"/);
  assert.throws(() => parseConversationArgs(["--count", "0"]), /Cannot read "--count 0"/);
});

Deno.test("largeBody() is a valid Messages body of the size asked for, turns alternating, ending with the user", () => {
  const bytes = largeBody("m", 2_000_000);
  assert.ok(Math.abs(bytes.byteLength - 2_000_000) < 1000, `${bytes.byteLength} bytes`);
  const body = JSON.parse(new TextDecoder().decode(bytes));
  assert.equal(body.model, "m");
  body.messages.forEach((m: { role: string }, i: number) => assert.equal(m.role, i % 2 ? "assistant" : "user"));
  assert.equal(body.messages.at(-1).content[0].type, "image");
});

/** @module The compaction seal: a round trip, and the values that must not open (changed, another token, another key). */
import assert from "node:assert/strict";
import { createSealer, SEALED_PREFIX, sealerFromEnv } from "../../src/conversations/seal.ts";

const KEY = new TextEncoder().encode("a compaction key of at least thirty-two characters");

Deno.test("createSealer() opens what it sealed, for the same token only", async () => {
  const sealer = createSealer(KEY);
  const sealed = await sealer.seal("tok_a", "the summary");
  assert.ok(sealed.startsWith(SEALED_PREFIX));
  assert.ok(!sealed.includes("summary"));
  assert.equal(await sealer.open("tok_a", sealed), "the summary");
  assert.equal(await sealer.open("tok_b", sealed), undefined);
});

Deno.test("createSealer() refuses a changed value and one sealed under another key", async () => {
  const sealer = createSealer(KEY);
  const sealed = await sealer.seal("tok_a", "the summary");
  for (let i = SEALED_PREFIX.length; i < sealed.length; i += 7) {
    const changed = sealed.slice(0, i) + (sealed[i] === "A" ? "B" : "A") + sealed.slice(i + 1);
    assert.equal(await sealer.open("tok_a", changed), undefined, `changed at ${i}`);
  }
  const other = createSealer(new TextEncoder().encode("another compaction key, also long enough"));
  assert.equal(await other.open("tok_a", sealed), undefined);
  for (const junk of ["", SEALED_PREFIX, `${SEALED_PREFIX}!!`, "gAAAAAB", `${SEALED_PREFIX}${"A".repeat(40)}`]) {
    assert.equal(await sealer.open("tok_a", junk), undefined, junk);
  }
});

Deno.test("sealerFromEnv() takes MODELGATE_COMPACTION_KEY, refuses a short one, and makes one when unset", async () => {
  const env = (value?: string) => (name: string) => name === "MODELGATE_COMPACTION_KEY" ? value : undefined;
  assert.throws(() => sealerFromEnv(env("short")), /MODELGATE_COMPACTION_KEY: it has 5 characters, at least 32/);
  const a = sealerFromEnv(env("x".repeat(32)));
  const b = sealerFromEnv(env("x".repeat(32)));
  assert.equal(a.fromEnv, true);
  // Two instances with the same key open each other's items.
  assert.equal(await b.sealer.open("tok", await a.sealer.seal("tok", "s")), "s");
  const random = sealerFromEnv(env(undefined));
  assert.equal(random.fromEnv, false);
  assert.equal(await a.sealer.open("tok", await random.sealer.seal("tok", "s")), undefined);
});

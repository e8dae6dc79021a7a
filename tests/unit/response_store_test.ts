/**
 * @module The response store on KV alone: every key it writes expires, a record larger than KV's value and commit
 * limits is split and read back whole, a lost chunk reads as not stored, and input_items pages.
 */
import assert from "node:assert/strict";
import { jsonBytes } from "../../src/conversations/size.ts";
import { responseStore, type StoredResponse } from "../../src/conversations/store.ts";
import { GatewayError } from "../../src/core/errors.ts";
import { pageItems } from "../../src/handlers/responses.ts";

/** A KV that notes each atomic commit: the keys it sets with their expireIn, and the keys it deletes. */
function recordingKv(kv: Deno.Kv) {
  const commits: { sets: { key: Deno.KvKey; expireIn?: number }[]; deletes: Deno.KvKey[] }[] = [];
  const wrapped = new Proxy(kv, {
    get(target, prop) {
      if (prop !== "atomic") {
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return () => {
        const op = target.atomic();
        const commit = { sets: [] as { key: Deno.KvKey; expireIn?: number }[], deletes: [] as Deno.KvKey[] };
        const proxy: Deno.AtomicOperation = new Proxy(op, {
          get(o, p) {
            if (p === "set") {
              return (key: Deno.KvKey, value: unknown, options?: { expireIn?: number }) => {
                commit.sets.push({ key, expireIn: options?.expireIn });
                o.set(key, value, options);
                return proxy;
              };
            }
            if (p === "delete") {
              return (key: Deno.KvKey) => (commit.deletes.push(key), o.delete(key), proxy);
            }
            if (p === "commit") return () => (commits.push(commit), o.commit());
            const value = Reflect.get(o, p);
            return typeof value === "function" ? value.bind(o) : value;
          },
        });
        return proxy;
      };
    },
  });
  return { kv: wrapped, commits };
}

function record(id: string, text: string): StoredResponse {
  return {
    response: {
      id,
      object: "response",
      status: "completed",
      output: [{ id: `msg_${id}_0`, type: "message", role: "assistant", content: [{ type: "output_text", text }] }],
    },
    input: [{ id: `msg_${id}_in0`, type: "message", role: "user", content: [{ type: "input_text", text }] }],
    chain: [],
  };
}

Deno.test("responseStore() sets every key with KV expireIn of the configured days", async () => {
  using real = await Deno.openKv(":memory:");
  const { kv, commits } = recordingKv(real);
  const store = responseStore(kv, { days: 3, now: () => 0 });
  await store.save("tok_a", record("resp_1", "x".repeat(150_000)));
  const sets = commits.flatMap((c) => c.sets);
  assert.ok(sets.length >= 5, "head, chunks and item index");
  assert.deepEqual(new Set(sets.map((s) => s.expireIn)), new Set([3 * 86_400_000]));
  assert.deepEqual(sets.at(-1)?.key, ["responses", "tok_a", "resp_1"], "the head is written last");
});

Deno.test("responseStore() splits a record beyond one value and one commit, and reads it back whole", async () => {
  using real = await Deno.openKv(":memory:");
  const { kv, commits } = recordingKv(real);
  const store = responseStore(kv, { days: 1, now: () => 0 });
  // Two-, three- and four-byte characters, so chunk edges fall inside them.
  const text = "é€🌍 ".repeat(120_000);
  const saved = record("resp_big", text);
  await store.save("tok_a", saved);
  assert.ok(commits.length >= 2, `${commits.length} commits`);
  assert.deepEqual(await store.load("tok_a", ["resp_big"]), [saved]);
  assert.deepEqual(await store.load("tok_b", ["resp_big"]), [undefined], "another token sees nothing");
  // A chunk gone before its head (it was written, and so expires, earlier) reads as not stored.
  await real.delete(["responses", "tok_a", "resp_big", 3]);
  assert.deepEqual(await store.load("tok_a", ["resp_big"]), [undefined]);
});

Deno.test("responseStore() finds items and owners, forgets deleted responses and purges a token's", async () => {
  using kv = await Deno.openKv(":memory:");
  let now = 0;
  const store = responseStore(kv, { days: 1, now: () => now });
  await store.save("tok_a", record("resp_1", "one"));
  await store.save("tok_a", record("resp_2", "two"));
  await store.save("tok_b", record("resp_3", "three"));
  const owners = async (token: string, items: string[]) =>
    (await store.itemHeads(token, items)).map((head) => head?.id);
  assert.deepEqual(await owners("tok_a", ["msg_resp_2_0", "msg_resp_1_0", "nope"]), ["resp_2", "resp_1", undefined]);
  assert.deepEqual(await owners("tok_b", ["msg_resp_2_0"]), [undefined]);
  // An item indexed before heads were kept with it still finds its response.
  await kv.set(["response_items", "tok_a", "msg_resp_2_0"], "resp_2");
  assert.deepEqual(await owners("tok_a", ["msg_resp_2_0"]), ["resp_2"]);
  assert.equal(await store.owner("resp_3", ["tok_a", "tok_b"]), "tok_b");
  assert.equal(await store.delete("tok_a", "resp_1"), true);
  assert.equal(await store.delete("tok_a", "resp_1"), false);
  assert.deepEqual(await owners("tok_a", ["msg_resp_1_0"]), [undefined]);
  assert.equal(await store.purge("tok_a"), 1);
  const left: Deno.KvKey[] = [];
  for await (const entry of kv.list({ prefix: [] })) left.push(entry.key);
  assert.ok(left.every((key) => key[1] === "tok_b"), JSON.stringify(left));
  now = 86_400_000;
  assert.deepEqual(await store.load("tok_b", ["resp_3"]), [undefined], "past its days, a response is gone");
  assert.equal(await store.owner("resp_3", ["tok_b"]), undefined);
});

const ITEMS = ["a", "b", "c", "d", "e"].map((id) => ({ id, type: "message" }));
const PAGES: { query: string; ids: string[]; more: boolean }[] = [
  { query: "", ids: ["e", "d", "c", "b", "a"], more: false },
  { query: "order=asc&limit=2", ids: ["a", "b"], more: true },
  { query: "order=asc&limit=2&after=b", ids: ["c", "d"], more: true },
  { query: "order=asc&after=d", ids: ["e"], more: false },
  { query: "limit=2&after=d", ids: ["c", "b"], more: true },
  { query: "order=asc&limit=2&before=d", ids: ["b", "c"], more: true },
  { query: "order=asc&after=a&before=d", ids: ["b", "c"], more: false },
  { query: "order=asc&after=d&before=b", ids: [], more: false },
];
for (const c of PAGES) {
  Deno.test(`pageItems() "${c.query}" gives ${c.ids.join(",") || "nothing"}`, () => {
    const page = pageItems(ITEMS, new URLSearchParams(c.query));
    assert.deepEqual((page.data as { id: string }[]).map((item) => item.id), c.ids);
    assert.deepEqual([page.first_id, page.last_id, page.has_more], [c.ids[0] ?? null, c.ids.at(-1) ?? null, c.more]);
  });
}

for (
  const [query, param] of [["limit=0", "limit"], ["limit=1.5", "limit"], ["order=random", "order"], [
    "before=z",
    "before",
  ]]
) {
  Deno.test(`pageItems() refuses "${query}" naming ${param}`, () => {
    assert.throws(
      () => pageItems(ITEMS, new URLSearchParams(query)),
      (err) => err instanceof GatewayError && err.status === 400 && err.param === param,
    );
  });
}

Deno.test("responseStore() reads an answer alone from the leading chunks, however large the input before it", async () => {
  using real = await Deno.openKv(":memory:");
  const read: Deno.KvKey[] = [];
  const kv = new Proxy(real, {
    get(target, prop) {
      if (prop === "getMany") {
        return (keys: Deno.KvKey[]) => (read.push(...keys), target.getMany(keys));
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const store = responseStore(kv, { days: 1, now: () => 0 });
  const saved = record("resp_big", "short answer");
  saved.input = [{ id: "msg_in", type: "message", role: "user", content: "é".repeat(400_000) }];
  await store.save("tok_a", saved);
  const heads = await store.heads("tok_a", ["resp_big"]);
  assert.ok(heads[0]!.bytes > 800_000 && heads[0]!.answerBytes <= 60_000, JSON.stringify(heads[0]));
  read.length = 0;
  assert.deepEqual(await store.answers("tok_a", heads), [saved.response]);
  assert.deepEqual(read, [["responses", "tok_a", "resp_big", 0]]);
  // What its items add to a conversation made whole, noted when it was kept.
  const items = [...saved.input, ...(saved.response.output as unknown[])];
  assert.ok(Math.abs(heads[0]!.replay! - jsonBytes(items)) <= 2, `${heads[0]!.replay} vs ${jsonBytes(items)}`);
});

const VALUES: [string, unknown][] = [
  ["ASCII with escapes", { a: 'quote " backslash \\ newline \n tab \t bell \u0007', b: [1, 2.5, -3e-7, null, true] }],
  ["two-, three- and four-byte characters", ["é", "€", "🌍", "é€🌍".repeat(30_000)]],
  ["a lone surrogate", "a\ud800b"],
  ["undefined members", { kept: 1, dropped: undefined, list: [undefined] }],
  ["an empty object and array", { o: {}, a: [] }],
];
for (const [name, value] of VALUES) {
  Deno.test(`jsonBytes() counts ${name} as JSON.stringify encodes it`, () => {
    assert.equal(jsonBytes(value), new TextEncoder().encode(JSON.stringify(value)).byteLength);
  });
}

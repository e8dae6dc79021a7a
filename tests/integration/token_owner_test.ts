/**
 * @module A token's owner shown wherever its use is: usage added up per person (`by=owner`) in the admin API, the CLI
 * and the console; the request log's entries and their `owner` filter; the token list and page; the CLI's token list.
 */
import assert from "node:assert/strict";
import { cliSetup } from "../_cli.ts";
import { open, post, signIn } from "../_console.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";

const ALICE = "alice@example.com";
const BOB = "bob@example.com";

/** Sends `n` requests with `secret`. */
async function send(gw: TestGateway, secret: string, n = 1) {
  for (let i = 0; i < n; i++) {
    const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
}

/** Two tokens of Alice's (three requests between them), one of Bob's and the operator's own, all used. */
async function traffic(gw: TestGateway) {
  const laptop = await gw.store.createToken({ group: "default", name: "laptop", owner: ALICE });
  const ci = await gw.store.createToken({ group: "default", name: "ci", owner: ALICE });
  const bob = await gw.store.createToken({ group: "default", name: "bob", owner: BOB });
  await send(gw, laptop.secret, 2);
  await send(gw, ci.secret);
  await send(gw, bob.secret);
  await send(gw, gw.tokens.default);
  await gw.flush();
  return { laptop: laptop.record.id, ci: ci.record.id, bob: bob.record.id };
}

Deno.test("usage by owner adds up each person's tokens and leaves out tokens without one", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  await traffic(gw);
  const byOwner = await (await gw.admin("GET", "/admin/usage?by=owner")).json();
  assert.equal(byOwner.by, "owner");
  assert.deepEqual(byOwner.data.map((r: { key: string; requests: number }) => [r.key, r.requests]), [
    [ALICE, 3],
    [BOB, 1],
  ]);
  const one = await (await gw.admin("GET", `/admin/usage?by=owner&name=${BOB}&per=day`)).json();
  assert.deepEqual(one.data.map((r: { key: string; requests: number }) => [r.key, r.requests]), [[BOB, 1]]);
  assert.ok(one.data[0].day, "per day, an owner's rows carry their day");
});

Deno.test("the request log names each entry's owner and filters by it, whatever the case of the email", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const ids = await traffic(gw);
  const all = (await (await gw.admin("GET", "/admin/requests")).json()).data;
  assert.deepEqual(all.map((e: { owner: string | null }) => e.owner).sort(), [ALICE, ALICE, ALICE, BOB, null]);
  for (const asked of [ALICE, "Alice@Example.COM"]) {
    const mine = (await (await gw.admin("GET", `/admin/requests?owner=${encodeURIComponent(asked)}`)).json()).data;
    assert.equal(mine.length, 3, asked);
    assert.deepEqual(new Set(mine.map((e: { token_id: string }) => e.token_id)), new Set([ids.laptop, ids.ci]));
  }
  const bad = await gw.admin("GET", "/admin/requests?owner=alice");
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.param, "owner");
});

Deno.test("the CLI makes a token for a person, lists its owner, and reads usage and the log by owner", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using setup = await cliSetup(upstream.url);
  const made = await setup.cli(`token create --group default --name laptop --owner ${ALICE} --json`);
  const { token, secret } = JSON.parse(made.out);
  assert.equal(token.owner, ALICE);
  assert.match(
    (await setup.cli("token list")).out,
    new RegExp(`OWNER[\\s\\S]*${token.id}\\s+laptop\\s+default\\s+${ALICE}`),
  );
  const kv = await Deno.openKv(setup.kvPath);
  try {
    await using gw = await startGateway(upstream.url, { kv });
    await send(gw, secret, 2);
    await gw.flush();
    const usage = JSON.parse((await setup.cli("usage --by owner --json")).out);
    assert.deepEqual(usage.data.map((r: { key: string; requests: number }) => [r.key, r.requests]), [[ALICE, 2]]);
    assert.match((await setup.cli("usage --by owner")).out, new RegExp(`by owner[\\s\\S]*${ALICE}\\s+2\\s`));
    const log = JSON.parse((await setup.cli(`usage log --owner ${ALICE} --json`)).out);
    assert.equal(log.length, 2);
    assert.match(
      (await setup.cli(`usage log --owner ${ALICE}`)).out,
      new RegExp(`${token.id}\\s+${ALICE}\\s+claude-test`),
    );
    assert.deepEqual(JSON.parse((await setup.cli(`usage log --owner ${BOB} --json`)).out), []);
  } finally {
    kv.close();
  }
});

Deno.test("the console shows owners in the token list and page, usage by owner and the log's owner filter", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const ids = await traffic(gw);
  const cookie = await signIn(gw);
  const list = await open(gw, "/ui/tokens", cookie);
  assert.match(list.text, /<th[^>]*>Owner<\/th>/);
  assert.match(list.text, new RegExp(`${ids.bob}[\\s\\S]*?<td>default</td>\\s*<td>${BOB}</td>`));
  const searched = await open(gw, `/ui/tokens?q=${BOB}`, cookie);
  assert.ok(searched.text.includes(ids.bob) && !searched.text.includes(ids.laptop), "search finds a token by owner");
  const page = await open(gw, `/ui/tokens/${ids.laptop}`, cookie);
  assert.match(page.text, new RegExp(`<dt>Owner</dt>\\s*<dd>${ALICE}</dd>`));
  const usage = await open(gw, "/ui/usage?by=owner", cookie);
  assert.equal(usage.status, 200);
  assert.ok(usage.text.includes(ALICE) && usage.text.includes(BOB));
  const log = await open(gw, `/ui/requests?owner=${encodeURIComponent(BOB)}`, cookie);
  assert.match(log.text, /1 newest request matching/);
  assert.ok(log.text.includes(`href="/ui/requests?owner=${encodeURIComponent(BOB)}"`), "the owner is a filter link");
  const made = await post(gw, "/ui/tokens", { group: "default", name: "for-carol", owner: "Carol@Example.com" }, {
    cookie,
  });
  assert.equal(made.status, 201);
  await made.body?.cancel();
  const carol = (await gw.store.listTokens()).find((t) => t.name === "for-carol")!;
  assert.equal(carol.owner, "carol@example.com");
});

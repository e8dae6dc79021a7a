/**
 * @module The console's HTTP contract, its pages: forms that go through the admin service's own checks and messages,
 * pages and methods that do not exist, a new token's secret shown once, the usage CSV, costs in the currency, and the
 * request log's deployment and pin columns and filters.
 */
import assert from "node:assert/strict";
import { open, PAGES, post, signIn } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY, messagesBody, startGateway } from "../_helpers.ts";
import { cachingDeployments, conversation, POOL, poolGateway, seededRandom, turn } from "../_prompt_cache.ts";
import { logKey } from "../../src/usage/log_entry.ts";
import { answerWithCacheUsage, ANTHROPIC_CACHE_COST, spendGateway } from "../_spend.ts";

/** A message as a page shows it, escaped. */
function asHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

Deno.test("forms go through the admin service: the same checks and messages as the admin API", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  const api = await (await gw.admin("POST", "/admin/tokens", { group: "default", limits: { tokens_per_day: -1 } }))
    .json();
  const res = await post(gw, "/ui/tokens", { group: "default", name: "bad", tokens_per_day: "-1" }, { cookie });
  assert.equal(res.status, 400);
  const page = await res.text();
  assert.ok(page.includes(asHtml(api.error.message)), api.error.message);
  assert.match(page, /<details class="panel"\s+open>/, "the form stays open");
  assert.match(page, /name="name"[^>]*value="bad"/, "with what was typed");
  assert.equal((await gw.store.listTokens()).length, 4, "nothing was created");

  const groupApi = await (await gw.admin("PATCH", "/admin/groups/default", { listing: "openai" })).json();
  const group = await post(gw, "/ui/groups/default", { listing: "openai", models: ["claude-test"] }, { cookie });
  assert.equal(group.status, 409);
  assert.ok((await group.text()).includes(asHtml(groupApi.error.message)), groupApi.error.message);
  const readOnly = await open(gw, "/ui/groups/default", cookie);
  assert.match(readOnly.text, /Defined in the config file/);
  assert.doesNotMatch(readOnly.text, /<form method="post" action="\/ui\/groups\/default"/);
});

Deno.test("a page that does not exist, a wrong method or a form in another encoding gets a page that says so", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  const missing = await open(gw, "/ui/nothing", cookie);
  assert.equal(missing.status, 404);
  assert.match(missing.text, /No console page at \/ui\/nothing/);
  const head = await fetch(`${gw.url}/ui/tokens`, { method: "HEAD", headers: { cookie } });
  assert.equal(head.status, 200);
  const wrong = await fetch(`${gw.url}/ui/tokens`, { method: "DELETE", headers: { cookie } });
  assert.equal(wrong.status, 405);
  assert.match(await wrong.text(), /Method DELETE is not allowed here/);
  const json = await fetch(`${gw.url}/ui/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: gw.url },
    body: JSON.stringify({ key: ADMIN_KEY }),
  });
  assert.equal(json.status, 415);
  assert.equal(json.headers.get("set-cookie"), null);
  assert.match(json.headers.get("content-security-policy")!, /default-src 'none'/);
  assert.match(await json.text(), /application\/x-www-form-urlencoded/);
});

Deno.test("a new token's secret is on the page that created it, and on no other page", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  const res = await post(gw, "/ui/tokens", { group: "oa", name: "carol", requests_per_minute: "60" }, { cookie });
  assert.equal(res.status, 201);
  const text = await res.text();
  const secret = /<code id="secret">(sk-[^<]+)<\/code>/.exec(text)?.[1];
  assert.ok(secret, "the secret is shown");
  const [token] = (await gw.store.listTokens()).filter((t) => t.name === "carol");
  assert.deepEqual([token.group, token.limits], ["oa", { requests_per_minute: 60 }]);
  for (const path of [...PAGES, `/ui/tokens/${token.id}`]) {
    assert.ok(!(await open(gw, path, cookie)).text.includes(secret), path);
  }
});

Deno.test("the usage CSV has a row per day and key, and defuses spreadsheet formulas", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  const day = new Date().toISOString().slice(0, 10);
  await gw.store.kv.set(["usage", "session", day, "=HYPERLINK(1)", "requests"], new Deno.KvU64(2n));
  const res = await fetch(`${gw.url}/ui/usage.csv?by=session&since=${day}&until=${day}`, { headers: { cookie } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/csv; charset=utf-8");
  assert.equal(
    res.headers.get("content-disposition"),
    `attachment; filename="modelgate-usage-by-session-${day}-to-${day}.csv"`,
  );
  const [head, row] = (await res.text()).trim().split("\r\n");
  assert.match(head, /^"day","session","requests",/);
  assert.match(row, new RegExp(`^"${day}","'=HYPERLINK\\(1\\)","2",`));
});

Deno.test("costs show in the config's currency when the gateway prices requests, and not otherwise", async () => {
  await using upstream = fakeUpstream();
  answerWithCacheUsage(upstream);
  await using gw = await spendGateway(upstream, { admin: true, extraYaml: "currency: EUR\n" });
  const { secret } = await (await gw.admin("POST", "/admin/tokens", { group: "spend", name: "payer" })).json();
  for (const model of ["claude-priced", "claude-test"]) {
    const res = await gw.post("/v1/messages", messagesBody({ model }), { "x-api-key": secret });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  await gw.flush();
  const cookie = await signIn(gw);
  const usage = (await open(gw, "/ui/usage?by=token", cookie)).text;
  assert.match(usage, /<th>Cost<\/th>/);
  assert.ok(usage.includes(`title="${ANTHROPIC_CACHE_COST} EUR">0.00019 EUR`), "rounded, exact in the tooltip");
  assert.match(usage, />\+1 unpriced</);
  assert.match(usage, /<option\s*>cost<\/option>/, "cost can be charted");
  const chart = (await open(gw, "/ui/usage?by=model&metric=cost", cookie)).text;
  assert.ok(chart.includes(`claude-priced: 0.00019 EUR</title>`), "the chart draws cost per day");
  const overview = (await open(gw, "/ui/", cookie)).text;
  assert.match(overview, /Cost today<\/div>\s*<div class="value">0\.00019 EUR/);
  assert.match(overview, /1 request without a price/);
  const log = (await open(gw, "/ui/requests", cookie)).text;
  assert.match(log, /<th>Cost<\/th>/);
  assert.match(log, />unpriced</);
  const day = new Date(gw.deps.now()).toISOString().slice(0, 10);
  const csv = await (await fetch(`${gw.url}/ui/usage.csv?by=model&since=${day}&until=${day}`, { headers: { cookie } }))
    .text();
  assert.match(csv, /"total_tokens","cost"\r\n/);
  assert.ok(csv.includes(`"claude-priced",`) && csv.includes(`"${ANTHROPIC_CACHE_COST}"\r\n`), csv);

  await using plain = await startGateway(upstream.url, { admin: true });
  const plainCookie = await signIn(plain);
  for (const path of ["/ui/", "/ui/usage", "/ui/requests", "/ui/tokens"]) {
    const text = (await open(plain, path, plainCookie)).text;
    assert.doesNotMatch(text, /<th>Cost<\/th>|Cost today/, path);
  }
});

/** The rows of the request log's table, newest first. */
function logRows(page: string): string[] {
  return (page.split("<tbody>")[1] ?? "").split("</tbody>")[0].split("<tr>").slice(1);
}

Deno.test("the request log shows the upstream that served each request and its pin, and filters by them", async () => {
  await using deployments = cachingDeployments(POOL);
  const { gateway: gw, token } = await poolGateway(deployments, { admin: true, random: seededRandom(18) });
  await using _ = gw;
  const conv = conversation("console");
  const headers = { "x-claude-code-session-id": "c0ffee00-console" };
  assert.equal(await turn(gw.url, token, conv, { headers }), 200);
  const first = gw.exchanges.at(-1)!.upstream!;
  deployments.failing.add(first);
  assert.equal(await turn(gw.url, token, conv, { headers }), 200);
  deployments.failing.clear();
  assert.equal(await turn(gw.url, token, conv, { headers }), 200);
  const second = POOL.find((name) => name !== first)!;
  assert.deepEqual(gw.exchanges.map((e) => [e.upstream, e.affinity]), [
    [first, "made"],
    [second, "moved"],
    [second, "kept"],
  ]);
  // Entries from before pins were recorded have no affinity field at all; one names an upstream that is markup.
  const before = Date.now() - 60_000;
  await gw.flush();
  const [newest] = (await (await gw.admin("GET", "/admin/requests?limit=1")).json()).data;
  const { affinity: _affinity, ...pinless } = newest;
  await gw.store.kv.set(logKey(before, "req_old1"), { ...pinless, request_id: "req_old1", upstream: null });
  await gw.store.kv.set(logKey(before - 1, "req_old2"), { ...pinless, request_id: "req_old2", upstream: "<b>x</b>" });

  const cookie = await signIn(gw);
  const page = (await open(gw, "/ui/requests", cookie)).text;
  assert.match(page, /<th>Model<\/th><th>Upstream<\/th><th>Pin<\/th>/);
  const rows = logRows(page);
  assert.equal(rows.length, 5);
  const cells = (row: string) => [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1].trim());
  for (const [i, [upstream, pin]] of [[second, "kept"], [second, "moved"], [first, "made"]].entries()) {
    const [, , , upstreamCell, pinCell] = cells(rows[i]);
    assert.equal(upstreamCell, `<a href="/ui/requests?upstream=${upstream}" title="${upstream}">${upstream}</a>`);
    assert.match(pinCell, new RegExp(`^<a href="/ui/requests\\?affinity=${pin}" title="[^"]+"><span class="badge`));
    assert.match(pinCell, new RegExp(`>${pin}</span></a>$`));
  }
  const [, , , noUpstream, noPin] = cells(rows[3]);
  assert.equal(noUpstream, '<span class="muted" title="no upstream was asked">–</span>');
  assert.match(noPin, /^<span class="muted" title="no pin: [^"]+">–<\/span>$/);
  assert.ok(cells(rows[4])[3].includes(">&lt;b&gt;x&lt;/b&gt;</a>"), "an upstream from KV stays text");
  assert.ok(!page.includes("<b>x</b>"));

  const kept = (await open(gw, "/ui/requests?affinity=kept", cookie)).text;
  assert.equal(logRows(kept).length, 1);
  assert.match(kept, /<option\s+selected\s*>kept<\/option>/);
  const moved = (await open(gw, `/ui/requests?upstream=${second}`, cookie)).text;
  assert.equal(logRows(moved).length, 2);
  assert.match(moved, new RegExp(`<option\\s+selected\\s*>${second}</option>`));
  const none = (await open(gw, `/ui/requests?upstream=${first}&affinity=kept`, cookie)).text;
  assert.match(none, /No request matches these filters/);

  // The admin API reads older entries as having had no pin, and names a bad pin filter.
  const listed = (await (await gw.admin("GET", "/admin/requests")).json()).data;
  assert.deepEqual(listed.map((e: { affinity: unknown }) => e.affinity), ["kept", "moved", "made", null, null]);
  const bad = await (await gw.admin("GET", "/admin/requests?affinity=sometimes")).json();
  assert.equal(bad.error.param, "affinity");
});

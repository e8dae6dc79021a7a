/**
 * @module The console's HTTP contract: off (404) without an admin key, sign-in and its cookie, sign-out, sessions
 * that end with the admin key, the Origin check, the security headers, escaping, and the admin service's own
 * checks and messages behind every form.
 */
import assert from "node:assert/strict";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";
import { answerWithCacheUsage, ANTHROPIC_CACHE_COST, spendGateway } from "../_spend.ts";

/** Sends a console form as a browser on the console's own page would (with its Origin). */
function post(
  gw: TestGateway,
  path: string,
  fields: Record<string, string | string[]>,
  headers: Record<string, string> = {},
): Promise<Response> {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const one of [value].flat()) body.append(name, one);
  }
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: gw.url, ...headers },
    body,
  });
}

/** Signs in and answers the session cookie (name=value). */
async function signIn(gw: TestGateway): Promise<string> {
  const res = await post(gw, "/ui/login", { key: ADMIN_KEY });
  assert.equal(res.status, 303);
  await res.body?.cancel();
  return res.headers.get("set-cookie")!.split(";")[0];
}

/** A console page's status and text. */
async function open(gw: TestGateway, path: string, cookie?: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw.url}${path}`, { redirect: "manual", headers: cookie ? { cookie } : {} });
  return { status: res.status, text: await res.text() };
}

Deno.test("the console answers 404 like any unknown path when MODELGATE_ADMIN_KEY is unset", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  const unknown = await fetch(`${gw.url}/nothing/here`);
  const unknownBody = await unknown.json();
  for (const [method, path] of [["GET", "/ui/"], ["GET", "/ui"], ["POST", "/ui/login"], ["PUT", "/ui/tokens"]]) {
    const res = await fetch(`${gw.url}${path}`, { method, body: method === "GET" ? undefined : "key=x" });
    assert.equal(res.status, 404, `${method} ${path}`);
    const body = await res.json();
    assert.deepEqual({ ...body.error, message: undefined }, { ...unknownBody.error, message: undefined });
    assert.equal(body.error.message, `Unknown path: ${method} ${path}`);
    assert.equal(res.headers.get("set-cookie"), null);
  }
  const css = await fetch(`${gw.url}/ui/assets/console.css`);
  assert.equal(css.status, 404);
  await css.body?.cancel();
});

Deno.test("sign-in: a form without a session, 401 and the form again on a wrong key, a strict cookie on the right one", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const form = await fetch(`${gw.url}/ui/`);
  assert.equal(form.status, 200);
  assert.match(form.headers.get("content-type")!, /^text\/html/);
  const formHtml = await form.text();
  assert.match(formHtml, /<form method="post" action="\/ui\/login"/);
  assert.match(formHtml, /type="password" name="key"/);

  const wrong = await post(gw, "/ui/login", { key: "not-the-key" });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.headers.get("set-cookie"), null);
  const wrongHtml = await wrong.text();
  assert.match(wrongHtml, /Wrong admin key/);
  assert.doesNotMatch(wrongHtml, /not-the-key/);

  const right = await post(gw, "/ui/login", { key: ADMIN_KEY, next: "/ui/tokens" });
  assert.equal(right.status, 303);
  assert.equal(right.headers.get("location"), "/ui/tokens");
  await right.body?.cancel();
  const cookie = right.headers.get("set-cookie")!;
  const [pair, ...attributes] = cookie.split(/;\s*/);
  assert.match(pair, /^modelgate_console=[A-Za-z0-9_-]{43}$/);
  assert.ok(!pair.includes(ADMIN_KEY));
  assert.deepEqual(attributes.filter((a) => !/^(Max-Age|Expires)=/.test(a)), [
    "Path=/ui",
    "HttpOnly",
    "SameSite=Strict",
  ]);
  assert.ok(attributes.includes("Max-Age=43200"), cookie);
  assert.ok(attributes.some((a) => /^Expires=\w{3}, \d{2} \w{3} \d{4}/.test(a)), cookie);

  const tokens = await open(gw, "/ui/tokens", pair);
  assert.equal(tokens.status, 200);
  assert.match(tokens.text, /<h1>Tokens<\/h1>/);
  assert.ok(!tokens.text.includes(ADMIN_KEY), "the admin key never appears in a page");

  // A next page outside the console is ignored.
  const away = await post(gw, "/ui/login", { key: ADMIN_KEY, next: "https://elsewhere.example/" });
  assert.equal(away.headers.get("location"), "/ui/");
  await away.body?.cancel();
});

Deno.test("the session cookie is Secure when the request came over https (through a proxy that says so)", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const res = await post(gw, "/ui/login", { key: ADMIN_KEY }, { "x-forwarded-proto": "https" });
  await res.body?.cancel();
  assert.match(res.headers.get("set-cookie")!, /; Secure$/);
});

Deno.test("signing out ends the session: the same cookie then gets the sign-in form", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  assert.match((await open(gw, "/ui/groups", cookie)).text, /<h1>Groups<\/h1>/);
  const out = await post(gw, "/ui/logout", {}, { cookie });
  assert.equal(out.status, 303);
  await out.body?.cancel();
  assert.match(out.headers.get("set-cookie")!, /^modelgate_console=; Max-Age=0;/);
  const after = await open(gw, "/ui/groups", cookie);
  assert.match(after.text, /<h1>Sign in<\/h1>/);
  assert.doesNotMatch(after.text, /<h1>Groups/);
});

Deno.test("a session ends twelve hours after signing in", async () => {
  await using upstream = fakeUpstream();
  let now = Date.parse("2026-03-04T05:06:07Z");
  await using gw = await startGateway(upstream.url, { admin: true, now: () => new Date(now) });
  const cookie = await signIn(gw);
  now += 12 * 3_600_000 - 1;
  assert.match((await open(gw, "/ui/tokens", cookie)).text, /<h1>Tokens<\/h1>/);
  now += 1;
  assert.match((await open(gw, "/ui/tokens", cookie)).text, /<h1>Sign in<\/h1>/);
});

Deno.test("changing the admin key ends every session, on every instance of the KV", async () => {
  await using upstream = fakeUpstream();
  await using kv = await Deno.openKv(":memory:");
  await using before = await startGateway(upstream.url, { admin: true, kv });
  const cookie = await signIn(before);
  await using after = await startGateway(upstream.url, { kv, env: { MODELGATE_ADMIN_KEY: "a-new-admin-key-0123" } });
  await using same = await startGateway(upstream.url, { admin: true, kv });
  assert.match((await open(same, "/ui/tokens", cookie)).text, /<h1>Tokens<\/h1>/, "another instance, same key");
  assert.match((await open(after, "/ui/tokens", cookie)).text, /<h1>Sign in<\/h1>/, "another key");
});

Deno.test("a change without the console's Origin is refused (403) and changes nothing", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  const before = (await gw.store.listTokens()).length;
  for (const origin of [{ origin: "https://evil.example" }, { origin: "null" }, {}] as Record<string, string>[]) {
    const body = new URLSearchParams({ group: "default", name: "csrf" });
    const res = await fetch(`${gw.url}/ui/tokens`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie, ...origin },
      body,
    });
    assert.equal(res.status, 403, JSON.stringify(origin));
    assert.match(await res.text(), /did not come from the console/);
  }
  assert.equal((await gw.store.listTokens()).length, before);
  const login = await fetch(`${gw.url}/ui/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" },
    body: new URLSearchParams({ key: ADMIN_KEY }),
  });
  assert.equal(login.status, 403);
  assert.equal(login.headers.get("set-cookie"), null);
  await login.body?.cancel();
});

const PAGES = ["/ui/", "/ui/tokens", "/ui/groups", "/ui/groups/default", "/ui/usage", "/ui/requests", "/ui/upstreams"];

Deno.test("every page carries a policy that forbids inline script, and has none", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  for (const path of ["/ui/", ...PAGES]) {
    const res = await fetch(`${gw.url}${path}`, { headers: path === "/ui/" ? {} : { cookie } });
    assert.equal(res.status, 200, path);
    const csp = res.headers.get("content-security-policy")!;
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    assert.equal(res.headers.get("cache-control"), "no-store");
    const text = await res.text();
    for (const script of text.match(/<script\b[^>]*>[\s\S]*?<\/script>/g) ?? []) {
      assert.match(script, /^<script src="\/ui\/assets\/console\.js\?v=\w+" defer><\/script>$/, path);
    }
    assert.doesNotMatch(text, /\son[a-z]+=|\sstyle=|javascript:/i, path);
  }
  const script = await fetch(`${gw.url}/ui/assets/console.js?v=1`);
  assert.equal(script.headers.get("content-type"), "text/javascript; charset=utf-8");
  assert.match(script.headers.get("content-security-policy")!, /default-src 'none'/);
  assert.match(await script.text(), /DOMContentLoaded/);
});

Deno.test("values from clients and KV are escaped on every page", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const evil = `<img src=x onerror=alert(1)>"'&`;
  const created = await gw.admin("POST", "/admin/tokens", { group: "default", name: evil });
  const { token } = await created.json();
  const cookie = await signIn(gw);
  for (const path of ["/ui/tokens", `/ui/tokens/${token.id}`, "/ui/requests", "/ui/usage"]) {
    const { text } = await open(gw, path, cookie);
    assert.ok(!text.includes("<img src=x"), path);
  }
  const { text } = await open(gw, "/ui/tokens", cookie);
  assert.ok(text.includes("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;"));
  // A filter value typed into a URL comes back as text too.
  const search = await open(gw, `/ui/tokens?q=${encodeURIComponent('"><script>alert(1)</script>')}`, cookie);
  assert.ok(!search.text.includes("<script>alert(1)"));
  assert.ok(search.text.includes("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
});

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

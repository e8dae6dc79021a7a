/**
 * @module The console's HTTP contract, its security side: off (404) without an admin key, sign-in and its cookie,
 * sign-out, sessions that end with the admin key, the Origin check, the security headers and escaping.
 */
import assert from "node:assert/strict";
import { open, PAGES, post, signIn } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY, startGateway } from "../_helpers.ts";
import { head, rawExchange } from "../_raw_http.ts";

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

Deno.test("over https (through a trusted proxy that says so) the session cookie is __Host- prefixed and Secure", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true, extraYaml: "trusted_proxies: [127.0.0.1]" });
  const https = { "x-forwarded-proto": "https" };
  const res = await post(gw, "/ui/login", { key: ADMIN_KEY }, https);
  await res.body?.cancel();
  const cookie = res.headers.get("set-cookie")!;
  assert.match(cookie, /^__Host-modelgate_console=[A-Za-z0-9_-]{43}; /);
  assert.match(cookie, /; Path=\/; HttpOnly; SameSite=Strict; Secure$/);
  const pair = cookie.split(";")[0];
  const page = (cookie: string) =>
    fetch(`${gw.url}/ui/tokens`, { headers: { ...https, cookie } }).then((r) => r.text());
  assert.match(await page(pair), /<h1>Tokens<\/h1>/);
  // The same id under the plain name (which a sibling domain could set) opens nothing over https.
  assert.match(await page(pair.replace("__Host-", "")), /<h1>Sign in<\/h1>/);
  const out = await post(gw, "/ui/logout", {}, { ...https, cookie: pair });
  await out.body?.cancel();
  assert.match(out.headers.get("set-cookie")!, /^__Host-modelgate_console=; Max-Age=0;.*; Secure$/);
  assert.match(await page(pair), /<h1>Sign in<\/h1>/);
  // From an address that is no trusted proxy, the header is anyone's word and changes nothing.
  await using plain = await startGateway(upstream.url, { admin: true });
  const direct = await post(plain, "/ui/login", { key: ADMIN_KEY }, https);
  await direct.body?.cancel();
  const plainCookie = direct.headers.get("set-cookie")!;
  assert.match(plainCookie, /^modelgate_console=[A-Za-z0-9_-]{43}; .*; Path=\/ui; HttpOnly; SameSite=Strict$/);
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

Deno.test("a session ends twelve hours after signing in, however busy", async () => {
  await using upstream = fakeUpstream();
  const start = Date.parse("2026-03-04T05:06:07Z");
  let now = start;
  await using gw = await startGateway(upstream.url, { admin: true, now: () => new Date(now) });
  const cookie = await signIn(gw);
  while (now < start + 12 * 3_600_000 - 1) {
    now = Math.min(now + 30 * 60_000, start + 12 * 3_600_000 - 1);
    assert.match((await open(gw, "/ui/tokens", cookie)).text, /<h1>Tokens<\/h1>/);
  }
  now += 1;
  assert.match((await open(gw, "/ui/tokens", cookie)).text, /<h1>Sign in<\/h1>/);
});

Deno.test("a session ends an idle lifetime after its last page (console.session_idle_ms), not after its first", async () => {
  await using upstream = fakeUpstream();
  let now = Date.parse("2026-03-04T05:06:07Z");
  const extraYaml = "console: { session_idle_ms: 600000 }\n";
  await using gw = await startGateway(upstream.url, { admin: true, extraYaml, now: () => new Date(now) });
  const cookie = await signIn(gw);
  for (let i = 0; i < 3; i++) {
    now += 600_000 - 1;
    assert.match((await open(gw, "/ui/tokens", cookie)).text, /<h1>Tokens<\/h1>/, `page ${i}`);
  }
  now += 600_000;
  assert.match((await open(gw, "/ui/tokens", cookie)).text, /<h1>Sign in<\/h1>/);
  // The default idle lifetime is an hour.
  await using plain = await startGateway(upstream.url, { admin: true, now: () => new Date(now) });
  const other = await signIn(plain);
  now += 3_600_000 - 1;
  assert.match((await open(plain, "/ui/tokens", other)).text, /<h1>Tokens<\/h1>/);
  now += 3_600_000;
  assert.match((await open(plain, "/ui/tokens", other)).text, /<h1>Sign in<\/h1>/);
});

Deno.test("changing the admin key ends every session, on every instance of the KV", async () => {
  await using upstream = fakeUpstream();
  await using kv = await Deno.openKv(":memory:");
  await using before = await startGateway(upstream.url, { admin: true, kv });
  const cookie = await signIn(before);
  await using after = await startGateway(upstream.url, {
    kv,
    env: { MODELGATE_ADMIN_KEY: "a-new-admin-key-0123456789-abcdefghij" },
  });
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

Deno.test("a sign-in form that stops arriving gets a 408 page that closes the connection, as API bodies do", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true, extraYaml: "body_idle_timeout_ms: 100" });
  // The hand-written head names the host without its port, so the form's Origin does too.
  const stalled = head("/ui/login", {
    origin: "http://127.0.0.1",
    "content-type": "application/x-www-form-urlencoded",
    "content-length": "500",
  }) + "key=";
  const { head: status, body } = await rawExchange(gw.url, stalled);
  assert.match(status, /^HTTP\/1.1 408/);
  assert.match(status, /connection: close/i);
  assert.match(status, /content-security-policy: default-src 'none'/i);
  assert.match(body, /stopped arriving/);
});

/**
 * @module The operator's routes answer only for the gateway's own host names (a DNS-rebinding page is refused), a
 * proxy's X-Forwarded-Host counts only from trusted_proxies, the console's Origin check is exact, and the sign-in's
 * `next` never leaves the console.
 */
import assert from "node:assert/strict";
import { post } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY, startGateway, type TestGateway } from "../_helpers.ts";
import { rawExchange, rawRequest } from "../_raw_http.ts";

/** A request with a Host of the test's choosing; the answer's status line and headers, and its body. */
async function asHost(
  gw: TestGateway,
  request: { method?: string; path: string; host: string; headers?: Record<string, string>; body?: string },
) {
  const text = rawRequest(
    request.method ?? "GET",
    request.path,
    { host: request.host, ...request.headers },
    request.body,
  );
  const { head, body } = await rawExchange(gw.url, text);
  return { status: Number(head.split(" ")[1]), head, body };
}

const port = (gw: TestGateway) => new URL(gw.url).port;

Deno.test("a Host that is not the gateway's gets 421 on the console and the admin API, even with the right key", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const rebound = `rebind.evil.example:${port(gw)}`;
  const page = await asHost(gw, { path: "/ui/", host: rebound });
  assert.equal(page.status, 421);
  assert.match(page.body, /do not answer for host \\"rebind\.evil\.example\\": list it in public_hosts/);
  const signIn = await asHost(gw, {
    method: "POST",
    path: "/ui/login",
    host: rebound,
    headers: { origin: `http://${rebound}`, "content-type": "application/x-www-form-urlencoded" },
    body: `key=${ADMIN_KEY}`,
  });
  assert.equal(signIn.status, 421);
  assert.doesNotMatch(signIn.head, /set-cookie/i);
  const api = await asHost(gw, {
    path: "/admin/tokens",
    host: rebound,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
  assert.equal(api.status, 421);
  // The model routes are for any client under any name; their tokens are not the operator's.
  const models = await asHost(gw, { path: "/v1/models", host: rebound });
  assert.equal(models.status, 401);
  for (const host of [`localhost:${port(gw)}`, `127.0.0.1:${port(gw)}`, `[::1]:${port(gw)}`, "LocalHost"]) {
    assert.equal((await asHost(gw, { path: "/ui/", host })).status, 200, host);
  }
});

Deno.test("public_hosts lists the names the operator's routes answer for, and only them", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true, extraYaml: "public_hosts: [gw.example.com]\n" });
  assert.equal((await asHost(gw, { path: "/ui/", host: "gw.example.com" })).status, 200);
  assert.equal((await asHost(gw, { path: "/ui/", host: "gw.example.com:8443" })).status, 200);
  assert.equal((await asHost(gw, { path: "/ui/", host: "gw.example.co" })).status, 421);
  assert.equal((await asHost(gw, { path: "/ui/", host: "gw.example.com.evil.example" })).status, 421);
});

Deno.test("X-Forwarded-Host names the host only when a trusted proxy sends it", async () => {
  await using upstream = fakeUpstream();
  const yaml = "public_hosts: [gw.example.com]\n";
  await using plain = await startGateway(upstream.url, { admin: true, extraYaml: yaml });
  const untrusted = await asHost(plain, {
    path: "/ui/",
    host: "rebind.evil.example",
    headers: { "x-forwarded-host": "gw.example.com" },
  });
  assert.equal(untrusted.status, 421, "a client cannot vouch for itself");
  await using proxied = await startGateway(upstream.url, {
    admin: true,
    extraYaml: `${yaml}trusted_proxies: [127.0.0.0/8]\n`,
  });
  const trusted = await asHost(proxied, {
    path: "/ui/",
    host: "modelgate.internal:8787",
    headers: { "x-forwarded-host": "gw.example.com" },
  });
  assert.equal(trusted.status, 200);
});

Deno.test("the Origin check compares with a trusted X-Forwarded-Host exactly, not as a prefix", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, {
    admin: true,
    extraYaml: "public_hosts: [gw.example.com]\ntrusted_proxies: [127.0.0.1]\n",
  });
  const CASES = [
    { origin: "https://gw.example.com", status: 303 },
    { origin: "https://gw.example.co", status: 403 },
    { origin: "https://gw.example.com.evil.example", status: 403 },
    { origin: "https://evil-gw.example.com", status: 403 },
    { origin: "https://gw.example.com:8443", status: 403 },
    { origin: gw.url, status: 403 },
  ];
  for (const c of CASES) {
    const res = await post(gw, "/ui/login", { key: ADMIN_KEY }, {
      origin: c.origin,
      "x-forwarded-host": "gw.example.com",
      "x-forwarded-proto": "https",
    });
    assert.equal(res.status, c.status, c.origin);
    await res.body?.cancel();
  }
});

/** `next` values as a form could send them, and where a successful sign-in may send the browser. */
const NEXT = [
  { next: "/ui/tokens", to: "/ui/tokens" },
  { next: "/ui/usage?group=default&days=7", to: "/ui/usage?group=default&days=7" },
  { next: "//evil.example/", to: "/ui/" },
  { next: "//evil.example/ui/", to: "/ui/" },
  { next: "/\\evil.example/ui/", to: "/ui/" },
  { next: "/\\/evil.example/ui/", to: "/ui/" },
  { next: "https://evil.example/ui/", to: "/ui/" },
  { next: "http:/ui/x", to: "/ui/" },
  { next: "javascript:alert(1)", to: "/ui/" },
  { next: "/ui/../admin/tokens", to: "/ui/" },
  { next: "/ui/%2e%2e/%2e%2e/evil", to: "/ui/" },
  { next: "/ui/.%2E/x", to: "/ui/" },
  { next: "/ui/..//evil.example", to: "/ui/" },
  { next: "/%2F%2Fevil.example/ui/", to: "/ui/" },
  { next: "/ui/%2F%2Fevil.example", to: "/ui/%2F%2Fevil.example" },
  { next: "/ui/\t/evil", to: "/ui/" },
  { next: "/\t/evil.example/ui/", to: "/ui/" },
  { next: "/ui/x\r\nset-cookie: a=b", to: "/ui/" },
  { next: "ui/tokens", to: "/ui/" },
  { next: "", to: "/ui/" },
];

for (const c of NEXT) {
  Deno.test(`signing in with next=${JSON.stringify(c.next)} redirects to ${c.to}`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url, { admin: true });
    const res = await post(gw, "/ui/login", { key: ADMIN_KEY, next: c.next });
    assert.equal(res.status, 303);
    await res.body?.cancel();
    assert.equal(res.headers.get("location"), c.to);
  });
}

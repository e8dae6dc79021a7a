/**
 * @module Console sign-in through a real OpenID provider on 127.0.0.1, over HTTP with cookie jars (no browser): the
 * rules give the role, a person matching none is refused, a tampered state, a missing flow, a provider's refusal, a
 * replayed callback and an id_token altered on its way from the provider are refused with a clear page, failed
 * callbacks are rate limited per address, the redirect URI comes from the checked host, and no page or log line holds
 * the client secret, the admin key or a token secret. The flow's own rules are in console_oidc_flow_test.ts.
 */
import assert from "node:assert/strict";
import { sealFlow } from "../../src/console/oidc_flow.ts";
import { callback, oidcSignIn, open, post } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY, startGateway, type TestGateway } from "../_helpers.ts";
import { startOidcGateway, startOidcProvider, type TestProvider } from "../_oidc_provider.ts";
import { rawExchange, rawRequest } from "../_raw_http.ts";
import { deadlineFetch } from "../_reads.ts";

const fetchWithDeadline = deadlineFetch();

const ACCOUNTS = {
  ada: { email: "Ada@Example.com", name: "Ada", groups: ["platform-admins"] },
  vera: { email: "vera@example.com", groups: ["auditors"] },
  max: { email: "max@example.com" },
  zed: { email: "zed@elsewhere.test", groups: ["staff"] },
};

const RULES = [
  "{ group: platform-admins, role: admin }",
  "{ group: auditors, role: viewer }",
  "{ domain: example.com, role: member, token_groups: [default] }",
];

/** A gateway with rules for each account above but zed. */
function gateway(provider: TestProvider, upstreamUrl: string, oidc: string[] = [], top = ""): Promise<TestGateway> {
  return startOidcGateway(provider, upstreamUrl, { roles: RULES, oidc, top });
}

/** Every secret no page, audit record or log line may hold. */
function secretsOf(gw: TestGateway, provider: TestProvider, more: string[] = []): string[] {
  return [provider.clientSecret, ADMIN_KEY, ...Object.values(gw.tokens), ...more];
}

function assertNoSecret(where: string, text: string, secrets: string[]): void {
  for (const secret of secrets) assert.ok(!text.includes(secret), `${where} holds a secret`);
}

Deno.test("an admin signs in through the provider and revokes a token; the audit trail names them, with before and after", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const pages: string[] = [];
  const made = await (await gw.admin("POST", "/admin/tokens", { group: "default", name: "laptop" })).json();

  const signIn = await oidcSignIn(gw, provider, "ada", { next: `/ui/tokens/${made.token.id}` });
  assert.equal(signIn.status, 303);
  assert.equal(signIn.location, `/ui/tokens/${made.token.id}`);
  assert.ok(signIn.cookie, "a session cookie");
  const detail = await open(gw, `/ui/tokens/${made.token.id}`, signIn.cookie);
  assert.equal(detail.status, 200);
  assert.match(
    detail.text,
    /<span class="who"[^>]*>ada@example\.com · admin<\/span><form method="post" action="\/ui\/logout"/,
  );
  pages.push(detail.text);
  const revoke = await post(gw, `/ui/tokens/${made.token.id}/revoke`, {}, { cookie: signIn.cookie! });
  assert.equal(revoke.status, 303);
  await revoke.body?.cancel();

  const audit = await (await gw.admin("GET", "/admin/audit?action=token.revoke")).json();
  assert.equal(audit.data.length, 1);
  const [record] = audit.data;
  assert.equal(record.actor, "ada@example.com");
  assert.equal(record.via, "console");
  assert.equal(record.target, made.token.id);
  assert.equal(record.before.disabled, false);
  assert.equal(record.after.disabled, true);
  const auditPage = await open(gw, "/ui/audit", signIn.cookie);
  assert.match(auditPage.text, /ada@example\.com/);
  pages.push(auditPage.text, signIn.text);
  assert.ok(gw.logs.some((line) => line.event === "console_sign_in" && line.email === "ada@example.com"));

  const secrets = secretsOf(gw, provider, [made.secret]);
  for (const page of pages) assertNoSecret("a page", page, secrets);
  assertNoSecret("the audit trail", JSON.stringify(audit), secrets);
  assertNoSecret("the log", JSON.stringify(gw.logs), secrets);
});

Deno.test("the rules give each person their role, first match first: a viewer reads, a member is held to their pages", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const vera = await oidcSignIn(gw, provider, "vera");
  assert.equal((await open(gw, "/ui/tokens", vera.cookie)).status, 200);
  const change = await post(gw, "/ui/tokens", { group: "default", name: "x" }, { cookie: vera.cookie! });
  assert.equal(change.status, 403);
  await change.body?.cancel();
  const max = await oidcSignIn(gw, provider, "max");
  assert.equal((await open(gw, "/ui/tokens", max.cookie)).status, 403);
});

Deno.test("a person matching no rule is refused with a page that says so, and gets no session", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const zed = await oidcSignIn(gw, provider, "zed");
  assert.equal(zed.status, 403);
  assert.equal(zed.cookie, undefined);
  assert.match(zed.text, /zed@elsewhere\.test has no role on this gateway/);
  assert.ok(gw.logs.some((line) => line.event === "console_sign_in_no_role"));
});

Deno.test("a tampered state, a missing flow, a provider's refusal and a replayed code are refused with a page, never a 500", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const tampered = await oidcSignIn(gw, provider, "ada", { tamper: (url) => url.searchParams.set("state", "forged") });
  assert.equal(tampered.status, 401);
  assert.match(tampered.text, /state does not match/);
  assert.equal(tampered.cookie, undefined);

  const good = await oidcSignIn(gw, provider, "ada");
  assert.equal(good.status, 303);
  const replayed = await callback(good.callback, good.flow);
  assert.equal(replayed.status, 401);
  assert.match(replayed.text, /This sign-in was finished already/);
  assert.equal(replayed.cookie, undefined);

  const noFlow = await callback(good.callback, "other=1");
  assert.equal(noFlow.status, 401);
  assert.match(noFlow.text, /not started here/);
  const forgedFlow = await callback(good.callback, good.flow.replace(/\.[^.]+$/, ".AAAA"));
  assert.equal(forgedFlow.status, 401);
  // A flow rewritten to the state of the attacker's choosing, its MAC kept: the MAC no longer fits.
  const [name, value] = good.flow.split("=");
  const [payload, mac] = value.split(".");
  const flow = JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(payload, { alphabet: "base64url" })));
  const rewritten = new TextEncoder().encode(JSON.stringify({ ...flow, state: "forged" }))
    .toBase64({ alphabet: "base64url", omitPadding: true });
  const forgedState = new URL(good.callback);
  forgedState.searchParams.set("state", "forged");
  const rewrittenFlow = await callback(forgedState, `${name}=${rewritten}.${mac}`);
  assert.equal(rewrittenFlow.status, 401);
  assert.match(rewrittenFlow.text, /not started here/);

  const declined = await oidcSignIn(gw, provider, "ada", {
    tamper: (url) => url.search = `?error=access_denied&state=${url.searchParams.get("state")}`,
  });
  assert.equal(declined.status, 401);
  assert.match(declined.text, /did not sign you in \(access_denied\)/);
});

Deno.test("failed callbacks from one address are refused with 429 and a log line after a few; a good one still works elsewhere", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const good = await oidcSignIn(gw, provider, "ada");
  const statuses: number[] = [];
  for (let i = 0; i < 15; i++) statuses.push((await callback(good.callback, "nothing=1")).status);
  assert.deepEqual(statuses.slice(0, 10), Array(10).fill(401));
  assert.deepEqual(statuses.slice(10), Array(5).fill(429));
  const limited = await callback(good.callback, "nothing=1");
  assert.match(limited.text, /Too many wrong sign-ins from this address; retry in \d+ s/);
  assert.ok(gw.logs.some((line) => line.event === "auth_throttled" && line.credential === "sign_in"));
});

Deno.test("without redirect_url the provider is sent back to the host the browser used; with it, to that URL", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using derived = await gateway(provider, upstream.url);
  const start = await fetchWithDeadline(`${derived.url}/ui/auth/oidc`, { redirect: "manual" });
  await start.body?.cancel();
  const asked = new URL(start.headers.get("location")!);
  assert.equal(asked.searchParams.get("redirect_uri"), `${derived.url}/ui/auth/callback`);
  assert.equal(asked.searchParams.get("code_challenge_method"), "S256");
  assert.ok(asked.href.startsWith(`${provider.issuer}/`));

  await using fixed = await gateway(
    provider,
    upstream.url,
    ["redirect_url: https://gw.example.test/ui/auth/callback"],
  );
  const fixedStart = await fetchWithDeadline(`${fixed.url}/ui/auth/oidc`, { redirect: "manual" });
  await fixedStart.body?.cancel();
  const fixedAsked = new URL(fixedStart.headers.get("location")!);
  assert.equal(fixedAsked.searchParams.get("redirect_uri"), "https://gw.example.test/ui/auth/callback");
});

Deno.test("the sign-in page offers single sign-on beside the admin key, and only when auth.oidc is configured", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const page = await open(gw, "/ui/tokens");
  assert.match(page.text, /href="\/ui\/auth\/oidc\?next=%2Fui%2Ftokens"/);
  assert.match(page.text, /name="key"/);
  await using plain = await startGateway(upstream.url, { admin: true });
  const plainPage = await open(plain, "/ui/");
  assert.doesNotMatch(plainPage.text, /auth\/oidc/);
  assert.equal((await open(plain, "/ui/auth/oidc")).status, 200, "no flow: the sign-in page, as for any page");
});

/** Starts a sign-in with raw headers (a Host of the test's choosing); the status and the redirect_uri asked for. */
async function startAs(gw: TestGateway, headers: Record<string, string>) {
  const { head } = await rawExchange(gw.url, rawRequest("GET", "/ui/auth/oidc", headers));
  const location = /^location: (.*)$/im.exec(head)?.[1].trim();
  return {
    status: Number(head.split(" ")[1]),
    redirect: location && new URL(location).searchParams.get("redirect_uri"),
  };
}

Deno.test("a spoofed Host cannot choose where the provider sends the browser back: only a public host, via a trusted proxy", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const port = new URL(gw.url).port;
  const ask = (headers: Record<string, string>) => startAs(gw, headers);
  assert.deepEqual(await ask({ host: `evil.example:${port}` }), { status: 421, redirect: undefined });
  // Not a trusted proxy: its X-Forwarded-Host is not believed.
  assert.deepEqual(await ask({ host: `127.0.0.1:${port}`, "x-forwarded-host": "evil.example" }), {
    status: 303,
    redirect: `http://127.0.0.1:${port}/ui/auth/callback`,
  });

  await using proxied = await gateway(
    provider,
    upstream.url,
    [],
    "public_hosts: [gw.example.test]\ntrusted_proxies: [127.0.0.1]\n",
  );
  const viaProxy = (forwardedHost: string) =>
    startAs(proxied, { host: "internal:1", "x-forwarded-host": forwardedHost, "x-forwarded-proto": "https" });
  assert.deepEqual(await viaProxy("gw.example.test"), {
    status: 303,
    redirect: "https://gw.example.test/ui/auth/callback",
  });
  assert.equal((await viaProxy("evil.example")).status, 421);
});

Deno.test("a provider that cannot be reached gets a 502 page that says so, not a 500, and costs the address nothing", async () => {
  await using upstream = fakeUpstream();
  const provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  const good = await oidcSignIn(gw, provider, "ada");
  // Each callback finishes its own flow (a flow is finished once), started while the provider was up.
  const flows: { flow: string; state: string }[] = [];
  for (let i = 0; i < 12; i++) {
    const again = await fetchWithDeadline(`${gw.url}/ui/auth/oidc`, { redirect: "manual" });
    await again.body?.cancel();
    const flow = again.headers.get("set-cookie")!.split(";")[0];
    flows.push({ flow, state: new URL(again.headers.get("location")!).searchParams.get("state")! });
  }
  await provider[Symbol.asyncDispose]();
  for (const { flow, state } of flows) {
    const callbackUrl = new URL(good.callback);
    callbackUrl.searchParams.set("state", state);
    const down = await callback(callbackUrl, flow);
    assert.equal(down.status, 502);
    assert.match(down.text, /identity provider could not be reached/);
  }
  assert.ok(!gw.logs.some((line) => line.event === "internal_error"));
});

Deno.test("the callback checks the id_token's nonce and sends the PKCE verifier of its own flow", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await gateway(provider, upstream.url);
  // A flow cookie as only the gateway can make it (the test knows the admin key), with one value changed each time.
  for (
    const [changes, want] of [[{ nonce: "another" }, /nonce/], [{ verifier: "x".repeat(43) }, /invalid_grant/]] as const
  ) {
    const start = await fetchWithDeadline(`${gw.url}/ui/auth/oidc`, { redirect: "manual" });
    await start.body?.cancel();
    const [name, value] = start.headers.get("set-cookie")!.split(";")[0].split("=");
    const flow = JSON.parse(
      new TextDecoder().decode(Uint8Array.fromBase64(value.split(".")[0], { alphabet: "base64url" })),
    );
    const { redirect } = await provider.complete(start.headers.get("location")!, "ada");
    const refused = await callback(redirect!, `${name}=${await sealFlow(ADMIN_KEY, { ...flow, ...changes })}`);
    assert.equal(refused.status, 401, JSON.stringify(changes));
    assert.match(refused.text, want);
    assert.equal(refused.cookie, undefined);
  }
});

/** Changes the id_token in the provider's answer to the code exchange, as a network attacker would. */
function alteringTokens(provider: TestProvider, alter: (idToken: string) => string): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith(provider.issuer) || !url.includes("/token") || !res.ok) return res;
    const answer = await res.json();
    if (typeof answer.id_token === "string") answer.id_token = alter(answer.id_token);
    return Response.json(answer, { status: res.status, headers: { "cache-control": "no-store" } });
  };
}

const b64 = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).toBase64({ alphabet: "base64url" });
const decode = (part: string) =>
  JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(part, { alphabet: "base64url" })));

const ALTERATIONS: { name: string; alter(idToken: string): string }[] = [
  {
    name: "a signature with one byte changed",
    alter: (token) => token.slice(0, -2) + (token.at(-2) === "A" ? "B" : "A") + token.at(-1),
  },
  {
    name: "claims rewritten to another person's groups, signature kept",
    alter: (token) => {
      const [header, payload, signature] = token.split(".");
      return [header, b64({ ...decode(payload), groups: ["platform-admins"] }), signature].join(".");
    },
  },
  {
    name: "unsigned (alg none)",
    alter: (token) => {
      const [, payload] = token.split(".");
      return [b64({ alg: "none", typ: "JWT" }), b64({ ...decode(payload), groups: ["platform-admins"] }), ""].join(".");
    },
  },
];

Deno.test("an id_token altered between the provider and the gateway is refused at the callback, and starts no session", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  for (const alteration of ALTERATIONS) {
    await using gw = await startOidcGateway(provider, upstream.url, {
      roles: RULES,
      fetch: alteringTokens(provider, alteration.alter),
    });
    const vera = await oidcSignIn(gw, provider, "vera");
    assert.equal(vera.status, 401, alteration.name);
    assert.match(vera.text, /The id_token is not valid/, alteration.name);
    assert.equal(vera.cookie, undefined, alteration.name);
  }
  // The same sign-in with the provider's answer untouched works, so what refused them was the alteration.
  await using gw = await startOidcGateway(provider, upstream.url, {
    roles: RULES,
    fetch: alteringTokens(provider, (t) => t),
  });
  const vera = await oidcSignIn(gw, provider, "vera");
  assert.equal(vera.status, 303);
  assert.ok(vera.cookie);
});

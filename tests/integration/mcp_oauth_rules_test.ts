/**
 * @module The rules of the gateway's OAuth for /mcp, each refusal over real HTTP: the redirect URIs registration takes
 * (those of Claude's, ChatGPT's, VS Code's, Cursor's and Claude Code's clients) and refuses; authorization requests
 * with a wrong resource, no PKCE S256, an unknown client or an unregistered redirect; token requests with a bad or
 * missing verifier, another redirect, client or resource, an expired code, and a code used twice (its grant revoked);
 * the consent bound to the browser and the gateway's own page; a person who denies.
 */
import assert from "node:assert/strict";
import { s256 } from "../../src/access/oauth_rules.ts";
import { postMcp, startMcpGateway } from "../_mcp_gateway.ts";
import { browse, CookieJar, hidden, walkSignIn } from "../_mcp_oauth.ts";

const VERIFIER = "v".repeat(43) + "-verifier";
const CALLBACK = "http://127.0.0.1:40123/callback";

async function register(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function authorizeUrl(url: string, clientId: string, params: Record<string, string | null> = {}) {
  const query = new URLSearchParams();
  const all: Record<string, string | null> = {
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: await s256(VERIFIER),
    code_challenge_method: "S256",
    resource: `${url}/mcp`,
    state: "state-1",
    ...params,
  };
  for (const [name, value] of Object.entries(all)) if (value !== null) query.set(name, value);
  return `${url}/oauth/authorize?${query}`;
}

async function exchange(url: string, params: Record<string, string>) {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

Deno.test("registration takes the redirect URIs real clients register, and refuses plain http to another host", async () => {
  await using mcp = await startMcpGateway();
  const { url } = mcp.gateway;
  const taken = {
    claude: ["https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"],
    chatgpt: ["https://chatgpt.com/connector_platform_oauth_redirect"],
    vscode: [
      "https://vscode.dev/redirect",
      "https://insiders.vscode.dev/redirect",
      "http://127.0.0.1/",
      "http://127.0.0.1:33418/",
    ],
    cursor: [
      "cursor://anysphere.cursor-mcp/oauth/callback",
      "https://www.cursor.com/agents/mcp/oauth/callback",
      "http://localhost:8787/callback",
    ],
    claudeCode: ["http://localhost/callback", "http://127.0.0.1/callback"],
  };
  for (const [name, redirect_uris] of Object.entries(taken)) {
    const res = await register(url, {
      client_name: name,
      redirect_uris,
      token_endpoint_auth_method: "client_secret_post",
    });
    assert.equal(res.status, 201, `${name}: ${JSON.stringify(res.body)}`);
    assert.deepEqual(res.body.redirect_uris, redirect_uris);
    assert.equal(res.body.token_endpoint_auth_method, "none", "a public client, whatever it asked");
    assert.equal(res.body.client_secret, undefined);
  }
  const refused: [unknown, string, RegExp][] = [
    [{ redirect_uris: ["http://evil.example/cb"] }, "invalid_redirect_uri", /redirect_uris\[0\]: must be https/],
    [{ redirect_uris: ["https://ok.example/cb", "http://10.0.0.8/cb"] }, "invalid_redirect_uri", /redirect_uris\[1\]/],
    [{ redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri", /javascript/],
    [{ redirect_uris: ["https://ok.example/cb#x"] }, "invalid_redirect_uri", /fragment/],
    [{ redirect_uris: [] }, "invalid_redirect_uri", /one or more/],
    [{ redirect_uris: [CALLBACK], grant_types: ["client_credentials"] }, "invalid_client_metadata", /grant_types/],
    [{ redirect_uris: [CALLBACK], response_types: ["token"] }, "invalid_client_metadata", /response_types/],
  ];
  for (const [body, error, description] of refused) {
    const res = await register(url, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error, error);
    assert.match(String(res.body.error_description), description);
  }
});

Deno.test("an authorization request is checked: client, redirect, PKCE S256, the resource of this /mcp", async () => {
  await using mcp = await startMcpGateway();
  const { url } = mcp.gateway;
  const client = (await register(url, { client_name: "Rules", redirect_uris: [CALLBACK, "http://127.0.0.1:33418/"] }))
    .body.client_id as string;
  const jar = new CookieJar();
  // Refused with a page, and sent nowhere: the redirect is not to be trusted.
  for (
    const [params, text] of [
      [{ client_id: "oac_00000000000000000000000000000000" }, /no such client/],
      [{ redirect_uri: "http://127.0.0.1:40123/elsewhere" }, /redirect_uri: not one this client registered/],
      [{ redirect_uri: "https://attacker.example/callback" }, /not one this client registered/],
      [{ redirect_uri: null }, /redirect_uri: required/],
    ] as const
  ) {
    const step = await browse(jar, await authorizeUrl(url, client, params));
    assert.equal(step.status, 400, JSON.stringify(params));
    assert.equal(step.location, undefined);
    assert.match(step.page, text);
  }
  // Refused back to the client, with its state.
  for (
    const [params, error] of [
      [{ resource: `${url}/v1` }, "invalid_target"],
      [{ resource: `${url}/mcp/` }, "invalid_target"],
      [{ resource: null }, "invalid_target"],
      [{ code_challenge: null }, "invalid_request"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
      [{ code_challenge_method: null }, "invalid_request"],
      [{ response_type: "token" }, "unsupported_response_type"],
    ] as const
  ) {
    const step = await browse(jar, await authorizeUrl(url, client, params));
    assert.equal(step.status, 303, JSON.stringify(params));
    assert.equal(step.location?.origin, "http://127.0.0.1:40123");
    assert.equal(step.location?.searchParams.get("error"), error, JSON.stringify(params));
    assert.equal(step.location?.searchParams.get("state"), "state-1");
  }
  // A loopback redirect may come back on another port (RFC 8252): VS Code's 33418 was taken.
  const moved = await browse(jar, await authorizeUrl(url, client, { redirect_uri: "http://127.0.0.1:51234/" }));
  assert.equal(moved.status, 200, "the sign-in page");
  const audit = await mcp.gateway.store.kv.list({ prefix: ["audit"] });
  const actions = [];
  for await (const entry of audit) actions.push((entry.value as { action: string }).action);
  assert.ok(actions.filter((a) => a === "oauth.refused").length >= 10, "each refusal of a known client is recorded");
});

Deno.test("a code is redeemed once, in time, by its client, with its redirect, verifier and resource", async () => {
  let now = Date.parse("2026-11-25T12:00:00Z");
  await using mcp = await startMcpGateway({ now: () => new Date(now) });
  const { url } = mcp.gateway;
  const client = (await register(url, { client_name: "Codes", redirect_uris: [CALLBACK] })).body.client_id as string;
  const codeFor = async () => {
    const walked = await walkSignIn(await authorizeUrl(url, client), { token: mcp.tokens.tools });
    assert.equal(walked.redirect.searchParams.get("state"), "state-1");
    return walked.redirect.searchParams.get("code")!;
  };
  const good = (code: string) => ({
    grant_type: "authorization_code",
    code,
    client_id: client,
    redirect_uri: CALLBACK,
    code_verifier: VERIFIER,
    resource: `${url}/mcp`,
  });
  const refusals: [Record<string, string | undefined>, string, RegExp][] = [
    [{ code_verifier: "w".repeat(50) }, "invalid_grant", /code_verifier/],
    [{ code_verifier: undefined }, "invalid_grant", /code_verifier/],
    [{ redirect_uri: "http://127.0.0.1:40124/callback" }, "invalid_grant", /redirect_uri/],
    [{ client_id: "oac_11111111111111111111111111111111" }, "invalid_grant", /client_id/],
    [{ resource: `${url}/v1` }, "invalid_target", /resource/],
  ];
  for (const [change, error, description] of refusals) {
    const merged: Record<string, string | undefined> = { ...good(await codeFor()), ...change };
    const params = Object.fromEntries(Object.entries(merged).filter(([, value]) => value !== undefined));
    const res = await exchange(url, params as Record<string, string>);
    assert.equal(res.status, 400, JSON.stringify(change));
    assert.equal(res.body.error, error);
    assert.match(res.body.error_description, description);
  }
  const late = await codeFor();
  now += 61_000;
  assert.equal((await exchange(url, good(late))).body.error_description, "code: expired");

  const code = await codeFor();
  const first = await exchange(url, good(code));
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("cache-control"), "no-store");
  assert.equal(first.body.token_type, "Bearer");
  const ping = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  };
  const bearer = { authorization: `Bearer ${first.body.access_token}` };
  assert.equal((await postMcp(url, ping, bearer)).status, 200, "the access token works");
  const again = await exchange(url, good(code));
  assert.equal(again.status, 400);
  assert.equal(again.body.error, "invalid_grant");
  assert.equal(again.body.error_description, "code: used already");
  assert.equal((await postMcp(url, ping, bearer)).status, 401, "a code used twice revoked the grant it started");
  assert.equal((await exchange(url, { ...good(code), grant_type: "password" })).body.error, "unsupported_grant_type");
});

Deno.test("the consent is this browser's, from the gateway's own page; a person may deny", async () => {
  await using mcp = await startMcpGateway();
  const { url } = mcp.gateway;
  const client = (await register(url, { client_name: "Consent", redirect_uris: [CALLBACK] })).body.client_id as string;
  const denied = await walkSignIn(await authorizeUrl(url, client), { token: mcp.tokens.tools, decision: "deny" });
  assert.equal(denied.redirect.searchParams.get("error"), "access_denied");
  assert.equal(denied.redirect.searchParams.get("code"), null);

  const jar = new CookieJar();
  const start = await browse(jar, await authorizeUrl(url, client));
  const request = hidden(start.page, "request");
  const wrong = await browse(jar, `${url}/oauth/sign-in`, { request, token: "sk-wrong" });
  assert.equal(wrong.status, 401);
  assert.match(wrong.page, /That token cannot be used: Invalid API key/);
  const signed = await browse(jar, `${url}/oauth/sign-in`, { request, token: mcp.tokens.tools });
  assert.equal(signed.status, 303);
  const stranger = await browse(new CookieJar(), signed.location!);
  assert.equal(stranger.status, 400, "another browser cannot open this consent");
  const other = new CookieJar();
  await browse(other, await authorizeUrl(url, client));
  assert.ok(other.header().includes("modelgate_oauth="), "a browser with a sign-in of its own");
  assert.equal((await browse(other, signed.location!)).status, 400, "cannot open another's either");
  const noOrigin = await fetch(`${url}/oauth/consent`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header() },
    body: new URLSearchParams({ request, decision: "allow" }),
    redirect: "manual",
  });
  assert.equal(noOrigin.status, 403, "a form from another page is refused");
  await noOrigin.body?.cancel();
  const page = await browse(jar, signed.location!);
  assert.match(page.page, /the token/);
  assert.match(page.res.headers.get("content-security-policy") ?? "", /form-action 'self' http:\/\/127\.0\.0\.1:40123/);
  // Several answers at once (a double click, a replay): one decision, one code.
  const answers = await Promise.all(
    Array.from({ length: 5 }, () => browse(jar, `${url}/oauth/consent`, { request, decision: "allow" })),
  );
  assert.equal(answers.filter((answer) => answer.location?.searchParams.get("code")).length, 1);
  assert.equal(answers.filter((answer) => answer.status === 400).length, 4, "a decision is taken once");
});

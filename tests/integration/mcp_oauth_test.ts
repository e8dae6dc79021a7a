/**
 * @module The gateway as OAuth authorization server of its /mcp, over real HTTP with the official MCP SDK's own client
 * auth: the 401's challenge, discovery, dynamic registration, the code flow with PKCE through the sign-in with a
 * token (no identity provider), then listing and calling a tool; the access token refused on every other route; a
 * refresh that rotates, and a rotated refresh token that revokes its grant; revocation by the client.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "../_mcp_sdk.ts";
import { startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { callbackServer, memoryProvider, walkSignIn } from "../_mcp_oauth.ts";
import { deadlineFetch } from "../_helpers.ts";

/** Connects the SDK's client with `provider`; answers the client, or undefined when it was sent to sign in. */
async function connectWith(url: string, provider: ReturnType<typeof memoryProvider>) {
  const client = new Client({ name: "oauth-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    authProvider: provider,
    fetch: deadlineFetch(),
  });
  try {
    await client.connect(transport);
    return { client, transport };
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
    return { client: undefined, transport };
  }
}

Deno.test("an MCP client signs in with OAuth through the SDK, lists and calls a tool, refreshes and is revoked", async () => {
  await using mcp = await startMcpGateway({ admin: true });
  await using callback = callbackServer();
  const { url } = mcp.gateway;
  const provider = memoryProvider(callback.url, { client_name: "Test <agent>" });
  const first = await connectWith(url, provider);
  assert.equal(first.client, undefined, "the first connection is sent to sign in");
  assert.ok(provider.authorizationUrl, "the SDK found the authorization endpoint from the 401");
  assert.equal(provider.authorizationUrl.origin + provider.authorizationUrl.pathname, `${url}/oauth/authorize`);
  assert.equal(provider.authorizationUrl.searchParams.get("resource"), `${url}/mcp`);
  assert.equal(provider.authorizationUrl.searchParams.get("code_challenge_method"), "S256");
  assert.match(provider.saved.client?.client_id ?? "", /^oac_[0-9a-f]{32}$/, "registered dynamically");

  const walked = await walkSignIn(provider.authorizationUrl, { token: mcp.tokens.tools });
  assert.match(walked.consent ?? "", /Test &lt;agent&gt;/, "the consent page names the client, escaped");
  assert.ok(!walked.consent?.includes("<agent>"), "and nowhere as markup");
  assert.equal(walked.redirect.origin + walked.redirect.pathname, callback.url);
  assert.equal(walked.redirect.searchParams.get("state"), provider.authorizationUrl.searchParams.get("state"));
  await first.transport.finishAuth(walked.redirect.searchParams.get("code")!);
  const tokens = provider.saved.tokens!;
  assert.match(tokens.access_token, /^mga_oag_[0-9a-f]{16}\./);
  assert.ok(tokens.expires_in! <= 3600);

  const second = await connectWith(url, provider);
  assert.ok(second.client, "connected with the access token");
  const { tools } = await second.client.listTools();
  assert.ok(tools.some((tool) => tool.name === "docs_search"));
  const result = await second.client.callTool({ name: "docs_search", arguments: { query: "oauth" } });
  assert.equal(textOf(result), "found: oauth");
  await second.client.close();

  // The access token is for /mcp only.
  for (const path of ["/v1/models", "/admin/tokens"]) {
    const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    const body = await res.text();
    assert.equal(res.status, 401, `${path} refuses it`);
    if (path === "/v1/models") assert.match(body, /accepted on \/mcp only/);
  }

  // A refresh rotates the refresh token; the rotated one used again revokes the grant.
  const refresh = (token: string) =>
    fetch(`${url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: token,
        client_id: provider.saved.client!.client_id,
        resource: `${url}/mcp`,
      }),
    });
  const rotated = await refresh(tokens.refresh_token!);
  assert.equal(rotated.status, 200);
  const next = await rotated.json();
  assert.notEqual(next.refresh_token, tokens.refresh_token);
  const replay = await refresh(tokens.refresh_token!);
  assert.equal(replay.status, 400);
  assert.equal((await replay.json()).error, "invalid_grant");
  const after = await refresh(next.refresh_token);
  assert.equal(after.status, 400, "the newest refresh token went with its grant");
  const call = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${next.access_token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  assert.equal(call.status, 401, "and so did its access token");
  assert.match(call.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
  await call.body?.cancel();
  const audit = await (await mcp.gateway.admin("GET", "/admin/audit?limit=50", undefined, {})).text();
  for (const action of ["oauth_client.register", "oauth_grant.create", "oauth_grant.refresh", "oauth_grant.revoke"]) {
    assert.ok(audit.includes(action), `the audit trail has ${action}`);
  }
  const metrics = await (await fetch(`${url}/metrics`)).text();
  for (
    const line of [
      'modelgate_oauth_events_total{event="register",outcome="ok"} 1',
      'modelgate_oauth_events_total{event="token",outcome="ok"} 1',
      'modelgate_oauth_events_total{event="refresh",outcome="ok"} 1',
      'modelgate_oauth_events_total{event="refresh",outcome="reused"} 1',
      'modelgate_oauth_events_total{event="access",outcome="refused"} 1',
    ]
  ) {
    assert.ok(
      metrics.includes(line),
      `${line} in ${metrics.split("\n").filter((l) => l.includes("oauth")).join("\n")}`,
    );
  }
  const stored: string[] = [];
  for await (const entry of mcp.gateway.store.kv.list({ prefix: [] })) {
    stored.push(JSON.stringify([entry.key, entry.value], (_k, v) => typeof v === "bigint" ? String(v) : v));
  }
  const code = walked.redirect.searchParams.get("code")!;
  for (const secret of [code, tokens.access_token, tokens.refresh_token!, next.access_token, next.refresh_token]) {
    assert.ok(!stored.some((text) => text.includes(secret)), "KV keeps no secret, only hashes");
  }
  for (const secret of [tokens.access_token, tokens.refresh_token!, next.access_token, next.refresh_token]) {
    assert.ok(!audit.includes(secret), "no secret in the audit trail");
    assert.ok(!JSON.stringify(mcp.gateway.logs).includes(secret), "no secret in the log");
  }
});

/**
 * @module How an MCP client finds the gateway's OAuth from /mcp: the 401's challenge (and what a 401 for one of the
 * gateway's keys carries instead), the protected resource metadata and the authorization server metadata at every
 * path clients fetch, CORS for browser clients, and no OAuth at all when it is off or reached over plain http beyond
 * loopback. The gateway's tokens keep working on /mcp as before.
 */
import assert from "node:assert/strict";
import { connectMcp, postMcp, startMcpGateway } from "../_mcp_gateway.ts";

const PING = { jsonrpc: "2.0", id: 1, method: "ping" };
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

Deno.test("a 401 of /mcp starts a sign-in, except for a client that sent one of the gateway's keys", async () => {
  await using mcp = await startMcpGateway();
  const { url } = mcp.gateway;
  const missing = await postMcp(url, INIT);
  assert.equal(missing.status, 401);
  assert.equal(
    missing.headers.get("www-authenticate"),
    `Bearer resource_metadata="${url}/.well-known/oauth-protected-resource/mcp"`,
  );
  assert.match(missing.headers.get("access-control-expose-headers") ?? "", /WWW-Authenticate/);
  assert.equal(missing.body.error.code, -32000, "still a JSON-RPC error");

  // A client set up with a key (Claude Code's --header) is told the key is bad, not invited to sign in instead.
  const keyed: Record<string, string>[] = [{ authorization: "Bearer sk-not-a-real-token" }, { "x-api-key": "sk-x" }];
  for (const headers of keyed) {
    const bad = await postMcp(url, INIT, headers);
    assert.equal(bad.status, 401);
    const challenge = bad.headers.get("www-authenticate") ?? "";
    assert.match(challenge, /^Bearer error="invalid_token", error_description="Invalid API key"$/);
    assert.doesNotMatch(challenge, /resource_metadata/);
  }
  // A bearer that is no key of the gateway's (another server's token) is refused with the way to sign in.
  const other = await postMcp(url, INIT, { authorization: "Bearer eyJhbGciOi.something.else" });
  assert.match(other.headers.get("www-authenticate") ?? "", /error="invalid_token".*resource_metadata=/);

  // A good key is unchanged: no challenge, the session and the tools as before.
  const client = await connectMcp(url, mcp.tokens.tools);
  assert.ok((await client.listTools()).tools.some((tool) => tool.name === "docs_search"));
  await client.close();
  const ok = await postMcp(url, INIT, { authorization: `Bearer ${mcp.tokens.tools}` });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get("www-authenticate"), null);
});

Deno.test("the discovery documents are served at every path clients fetch, with CORS", async () => {
  await using mcp = await startMcpGateway();
  const { url } = mcp.gateway;
  for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
    const res = await fetch(`${url}${path}`, { headers: { "mcp-protocol-version": "2025-11-25" } });
    assert.equal(res.status, 200, path);
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    assert.deepEqual((await res.json()).authorization_servers, [url]);
  }
  const prm = await (await fetch(`${url}/.well-known/oauth-protected-resource/mcp`)).json();
  assert.equal(prm.resource, `${url}/mcp`);
  for (
    const path of [
      "/.well-known/oauth-authorization-server",
      "/.well-known/oauth-authorization-server/mcp",
      "/mcp/.well-known/oauth-authorization-server",
    ]
  ) {
    const res = await fetch(`${url}${path}`);
    assert.equal(res.status, 200, path);
    const meta = await res.json();
    assert.equal(meta.issuer, url);
    assert.equal(meta.registration_endpoint, `${url}/oauth/register`, `${path} has a registration_endpoint`);
    assert.deepEqual(meta.code_challenge_methods_supported, ["S256"]);
    assert.deepEqual(meta.token_endpoint_auth_methods_supported, ["none"]);
    assert.deepEqual(meta.grant_types_supported, ["authorization_code", "refresh_token"]);
    assert.equal(meta.client_id_metadata_document_supported, true);
    assert.equal(meta.revocation_endpoint, `${url}/oauth/revoke`);
  }
  // A browser client's preflight, with the header the SDK sends on discovery.
  const preflight = await fetch(`${url}/.well-known/oauth-authorization-server`, {
    method: "OPTIONS",
    headers: {
      origin: "https://app.example",
      "access-control-request-method": "GET",
      "access-control-request-headers": "mcp-protocol-version",
    },
  });
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /MCP-Protocol-Version/);
  const token = await fetch(`${url}/oauth/token`, { method: "OPTIONS" });
  assert.equal(token.status, 204);
  assert.equal(token.headers.get("access-control-allow-origin"), "*");
});

Deno.test("OAuth is not served over plain http beyond loopback, nor when turned off", async () => {
  await using mcp = await startMcpGateway({
    extraYaml: "public_hosts: [gw.example.com]\ntrusted_proxies: [127.0.0.1]\n",
  });
  const { url } = mcp.gateway;
  // As a proxy the gateway trusts forwards a request it took over plain http.
  const plain = { "x-forwarded-host": "gw.example.com", "x-forwarded-proto": "http" };
  const refused = await fetch(`${url}/.well-known/oauth-authorization-server`, { headers: plain });
  assert.equal(refused.status, 404);
  assert.match((await refused.json()).error_description, /HTTPS only/);
  const challenge = await postMcp(url, PING, plain);
  assert.equal(challenge.status, 401);
  assert.equal(challenge.headers.get("www-authenticate"), null, "no sign-in is offered over plain http");
  // Behind a TLS proxy the gateway trusts, the documents name the public https URL.
  const proxied = { "x-forwarded-proto": "https", "x-forwarded-host": "gw.example.com" };
  const meta = await (await fetch(`${url}/.well-known/oauth-protected-resource/mcp`, { headers: proxied })).json();
  assert.equal(meta.resource, "https://gw.example.com/mcp");
  const viaProxy = await postMcp(url, PING, proxied);
  assert.match(viaProxy.headers.get("www-authenticate") ?? "", /https:\/\/gw\.example\.com\/\.well-known/);
  // A host the gateway does not answer for gets no documents.
  const elsewhere = await fetch(`${url}/.well-known/oauth-authorization-server`, {
    headers: { "x-forwarded-host": "evil.test", "x-forwarded-proto": "https" },
  });
  assert.equal(elsewhere.status, 421);
  await elsewhere.body?.cancel();

  await using off = await startMcpGateway({ extraYaml: "auth: { mcp_oauth: { enabled: false } }\n" });
  const none = await fetch(`${off.gateway.url}/.well-known/oauth-protected-resource/mcp`);
  assert.equal(none.status, 404);
  await none.body?.cancel();
  const quiet = await postMcp(off.gateway.url, PING);
  assert.equal(quiet.status, 401);
  assert.equal(quiet.headers.get("www-authenticate"), null);
});

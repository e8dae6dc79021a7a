/**
 * @module OAuth grants of people who sign in through the team's identity provider (the real OpenID provider of the
 * tests, through the console's own sign-in and callback): the grant acts in the person's first token group, a change
 * of their role applies at the next call, removing them refuses their token at its next call and revokes the grant
 * (recorded), a person no rule admits gets no grant, and two instances on one KV share codes and their single use.
 */
import assert from "node:assert/strict";
import { s256 } from "../../src/access/oauth_rules.ts";
import { ADMIN_KEY, startGateway } from "../_helpers.ts";
import { connectMcp, postMcp, startMcpGateway } from "../_mcp_gateway.ts";
import { walkSignIn } from "../_mcp_oauth.ts";
import { startOidcProvider, type TestProvider } from "../_oidc_provider.ts";

const CALLBACK = "http://127.0.0.1:40999/callback";
const VERIFIER = "person-verifier-".repeat(4);

function oidcYaml(provider: TestProvider): string {
  return `auth:
  oidc:
    issuer: "${provider.issuer}"
    client_id: ${provider.clientId}
    client_secret_env: OIDC_CLIENT_SECRET
    scopes: [openid, email, profile, groups]
    roles:
      - { domain: example.com, role: member, token_groups: [tools] }
`;
}

/** A person's grant through the provider: the tokens, and the consent page they saw. */
async function signIn(url: string, provider: TestProvider, login: string, token: (url: string) => string = () => url) {
  const reg = await fetch(`${url}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "People test", redirect_uris: [CALLBACK] }),
  });
  const { client_id } = await reg.json();
  const query = new URLSearchParams({
    response_type: "code",
    client_id,
    redirect_uri: CALLBACK,
    code_challenge: await s256(VERIFIER),
    code_challenge_method: "S256",
    resource: `${url}/mcp`,
    state: "s",
  });
  const walked = await walkSignIn(`${url}/oauth/authorize?${query}`, { provider, login });
  const code = walked.redirect.searchParams.get("code");
  if (!code) return { walked, client_id };
  const exchange = () =>
    fetch(`${token(url)}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        client_id,
        redirect_uri: CALLBACK,
        code_verifier: VERIFIER,
        resource: `${url}/mcp`,
      }),
    }).then(async (res) => ({ status: res.status, body: await res.json() }));
  return { walked, client_id, exchange };
}

Deno.test("a person's grant follows their role: group changes apply at the next call, removal ends it", async () => {
  await using provider = await startOidcProvider({
    ada: { email: "ada@example.com", name: "Ada" },
    zed: { email: "zed@elsewhere.test" },
  });
  await using mcp = await startMcpGateway({
    admin: true,
    extraYaml: oidcYaml(provider),
    env: { OIDC_CLIENT_SECRET: provider.clientSecret },
  });
  const { url } = mcp.gateway;
  const { walked, exchange } = await signIn(url, provider, "ada");
  assert.match(walked.consent ?? "", /ada@example\.com/);
  assert.match(walked.consent ?? "", /<code>tools<\/code>/, "the group the grant acts in");
  assert.match(walked.consent ?? "", /<code>docs<\/code>: tools search, progress/, "what it may use");
  const tokens = await exchange!();
  assert.equal(tokens.status, 200);
  const access = tokens.body.access_token;
  const client = await connectMcp(url, access);
  const names = async () => (await client.listTools()).tools.map((tool) => tool.name).sort();
  assert.ok((await names()).includes("docs_progress"));
  const usage = mcp.gateway.exchanges.filter((e) => e.route === "/mcp" && e.owner === "ada@example.com");
  assert.ok(usage.length > 0, "calls are logged under the person");

  // An operator moves her to another group: the grant acts in it from the next call on.
  const moved = await mcp.gateway.admin("PUT", "/admin/people/ada@example.com", {
    role: "member",
    token_groups: ["searchers"],
  });
  assert.equal(moved.status, 200);
  assert.deepEqual(await names(), ["docs_search"]);
  const listed = await (await mcp.gateway.admin("GET", "/admin/mcp/grants")).json();
  assert.equal(listed.data.length, 1);
  assert.equal(listed.data[0].person, "ada@example.com");
  assert.equal(listed.data[0].group, "searchers");

  // Removed: her token is refused at its next call, and the grant is gone (recorded).
  assert.equal((await mcp.gateway.admin("DELETE", "/admin/people/ada@example.com")).status, 200);
  await assert.rejects(client.listTools(), /unknown, revoked or expired/);
  const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
  const refused = await postMcp(url, ping, { authorization: `Bearer ${access}` });
  assert.equal(refused.status, 401);
  assert.deepEqual((await (await mcp.gateway.admin("GET", "/admin/mcp/grants")).json()).data, []);
  const audit = await (await mcp.gateway.admin("GET", "/admin/audit?action=oauth_grant.revoke")).json();
  assert.equal(audit.data[0].target, listed.data[0].id);
  assert.equal(audit.data[0].actor, "admin key");
  const refresh = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: tokens.body.refresh_token,
      client_id: listed.data[0].client_id,
    }),
  });
  assert.equal(refresh.status, 400);
  await refresh.body?.cancel();
  await client.close().catch(() => {});

  // Someone no rule admits never reaches the consent page.
  const stranger = await signIn(url, provider, "zed").catch((err) => err as Error);
  assert.ok(stranger instanceof Error && /\(403\)[\s\S]*has no role on this gateway/.test(stranger.message));
});

Deno.test("two instances on one KV: a code from one is redeemed on the other, once", async () => {
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
  const kv = await Deno.openKv(":memory:");
  try {
    await using a = await startMcpGateway({
      admin: true,
      kv,
      extraYaml: oidcYaml(provider),
      env: { OIDC_CLIENT_SECRET: provider.clientSecret },
    });
    await using b = await startGateway("http://127.0.0.1:9", {
      kv,
      admin: true,
      env: { OIDC_CLIENT_SECRET: provider.clientSecret, MODELGATE_ADMIN_KEY: ADMIN_KEY },
      extraYaml: oidcYaml(provider),
      extraGroups: "  - { name: tools, listing: anthropic, models: [claude-test] }\n",
    });
    const { exchange } = await signIn(a.gateway.url, provider, "ada", () => b.url);
    const onB = await exchange!();
    assert.equal(onB.status, 200, JSON.stringify(onB.body));
    const again = await exchange!();
    assert.equal(again.body.error_description, "code: used already");
    // The audience: a token for one gateway's /mcp is refused by another's (here, another port).
    const other = await signIn(a.gateway.url, provider, "ada");
    const tokens = await other.exchange!();
    const init = { jsonrpc: "2.0", id: 1, method: "ping" };
    const elsewhere = await postMcp(b.url, init, { authorization: `Bearer ${tokens.body.access_token}` });
    assert.equal(elsewhere.status, 401);
    assert.match(elsewhere.body.error.message, new RegExp(`is for ${a.gateway.url}/mcp, not ${b.url}/mcp`));
    const here = await postMcp(a.gateway.url, init, { authorization: `Bearer ${tokens.body.access_token}` });
    assert.notEqual(here.status, 401, "and taken by its own");
  } finally {
    kv.close();
  }
});

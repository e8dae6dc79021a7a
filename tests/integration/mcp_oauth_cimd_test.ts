/**
 * @module Clients whose id is the https URL of a client id metadata document: the SDK signs in with one (no
 * registration), the gateway fetches it once and keeps it, and refuses a document that is not over https, is on this
 * machine or a private network, names another client id, redirects, is too large, or lists a redirect the rules
 * refuse. The documents come from a loopback fake through the gateway's fetch (the test seam); the rule that a
 * client id is an https URL on a public host is the production one.
 */
import assert from "node:assert/strict";
import { startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { browse, callbackServer, CookieJar, memoryProvider, walkSignIn } from "../_mcp_oauth.ts";
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "../_mcp_sdk.ts";
import { deadlineFetch } from "../_helpers.ts";

const SITE = "https://clients.example.test";

/** The documents the fake serves, by path; each request it got, by path. */
function documentServer(documents: Record<string, () => Response>) {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    seen.push(path);
    return documents[path]?.() ?? new Response("not found", { status: 404 });
  });
  /** The gateway's fetch: the site's https URLs go to the fake; the rest as they are. */
  const gatewayFetch: typeof fetch = (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith(`${SITE}/`)) return fetch(input, init);
    return fetch(`http://127.0.0.1:${server.addr.port}${url.slice(SITE.length)}`, init);
  };
  return { seen, gatewayFetch, [Symbol.asyncDispose]: () => server.shutdown() };
}

Deno.test("a client id metadata document signs a client in without registration, and bad ones are refused", async () => {
  await using callback = callbackServer();
  const doc = (body: unknown, init?: ResponseInit) => () => Response.json(body, init);
  await using site = documentServer({
    "/agent.json": doc({
      client_id: `${SITE}/agent.json`,
      client_name: "Document <agent>",
      redirect_uris: [callback.url],
      token_endpoint_auth_method: "none",
    }, { headers: { "cache-control": "max-age=600" } }),
    "/liar.json": doc({ client_id: `${SITE}/other.json`, redirect_uris: [callback.url] }),
    "/plain-http.json": doc({ client_id: `${SITE}/plain-http.json`, redirect_uris: ["http://evil.example/cb"] }),
    "/secret.json": doc({
      client_id: `${SITE}/secret.json`,
      redirect_uris: [callback.url],
      token_endpoint_auth_method: "private_key_jwt",
    }),
    "/moved.json": () => new Response(null, { status: 302, headers: { location: `${SITE}/agent.json` } }),
    "/huge.json": doc({ client_id: `${SITE}/huge.json`, redirect_uris: [callback.url], pad: "x".repeat(20_000) }),
  });
  await using mcp = await startMcpGateway({ fetch: site.gatewayFetch });
  const { url } = mcp.gateway;

  const provider = memoryProvider(callback.url, {}, { clientMetadataUrl: `${SITE}/agent.json` });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    authProvider: provider,
    fetch: deadlineFetch(),
  });
  await assert.rejects(new Client({ name: "t", version: "1" }).connect(transport), UnauthorizedError);
  assert.equal(provider.saved.client?.client_id, `${SITE}/agent.json`, "no registration: the URL is the client id");
  const walked = await walkSignIn(provider.authorizationUrl!, { token: mcp.tokens.all });
  assert.match(walked.consent ?? "", /Document &lt;agent&gt;/);
  await transport.finishAuth(walked.redirect.searchParams.get("code")!);
  const client = new Client({ name: "t", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: provider }));
  assert.equal(textOf(await client.callTool({ name: "docs_search", arguments: { query: "cimd" } })), "found: cimd");
  await client.close();
  assert.equal(site.seen.filter((path) => path === "/agent.json").length, 1, "fetched once, then kept");

  const jar = new CookieJar();
  const refused: [string, RegExp][] = [
    [`${SITE}/liar.json`, /does not name itself/],
    [`${SITE}/plain-http.json`, /redirect_uris\[0\]: must be https/],
    [`${SITE}/secret.json`, /token_endpoint_auth_method/],
    [`${SITE}/moved.json`, /answered HTTP 302/],
    [`${SITE}/huge.json`, /larger than/],
    [`${SITE}/missing.json`, /answered HTTP 404/],
    ["http://clients.example.test/agent.json", /must be an https URL/],
    ["https://127.0.0.1/agent.json", /must be on a public host/],
    ["https://10.1.2.3/agent.json", /must be on a public host/],
    ["https://localhost/agent.json", /must be on a public host/],
    [`${SITE}/`, /must have a path/],
  ];
  for (const [clientId, text] of refused) {
    const query = new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: callback.url,
      code_challenge: "x".repeat(43),
      code_challenge_method: "S256",
      resource: `${url}/mcp`,
    });
    const step = await browse(jar, `${url}/oauth/authorize?${query}`);
    assert.equal(step.status, 400, clientId);
    assert.equal(step.location, undefined, "sent nowhere");
    assert.match(step.page, text, clientId);
  }
  assert.ok(!site.seen.includes("/other.json"));
});

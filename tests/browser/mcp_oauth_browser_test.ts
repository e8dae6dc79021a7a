/**
 * @module An MCP client added by URL alone, in a real browser: the official SDK's client finds the gateway's OAuth from
 * the 401, registers, and sends the person to sign in; Chromium (puppeteer-core) follows it through the team's real
 * OpenID provider (the console's own sign-in and callback), the consent page (screenshot) and back to the client's
 * loopback redirect; the SDK then lists and calls a tool. The console's page of grants (screenshot) shows the grant and
 * revokes it, and the client's next call is refused. Screenshots go to $MODELGATE_SCREENSHOTS when set.
 */
import assert from "node:assert/strict";
import { ADMIN_KEY } from "../_helpers.ts";
import { postMcp, startMcpGateway, textOf } from "../_mcp_gateway.ts";
import { callbackServer, memoryProvider } from "../_mcp_oauth.ts";
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "../_mcp_sdk.ts";
import { startOidcProvider } from "../_oidc_provider.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";
import { follow, text } from "./_page.ts";

const CHROMIUM = chromiumOnThisMachine();
const NAME = "an MCP client signs a person in through the identity provider in a browser, then calls a tool";
/** No name resolves but the loopback address: the provider's own pages ask for a web font from the internet. */
const LOOPBACK_ONLY = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1";

Deno.test({
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  async fn() {
    if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
    await using provider = await startOidcProvider({ ada: { email: "ada@example.com", name: "Ada Lovelace" } });
    await using mcp = await startMcpGateway({
      admin: true,
      env: { OIDC_CLIENT_SECRET: provider.clientSecret },
      extraYaml: `auth:
  oidc:
    issuer: "${provider.issuer}"
    client_id: ${provider.clientId}
    client_secret_env: OIDC_CLIENT_SECRET
    roles:
      - { domain: example.com, role: member, token_groups: [tools] }
`,
    });
    const { url } = mcp.gateway;
    await using callback = callbackServer();
    const sdk = memoryProvider(callback.url, { client_name: "Ada's <i>agent</i>" });
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: sdk });
    await assert.rejects(new Client({ name: "agent", version: "1" }).connect(transport), UnauthorizedError);

    await using chromium = await launchChromium(CHROMIUM.path, { name: "oauth", args: [LOOPBACK_ONLY] });
    const { browser, shots } = chromium;
    const problems: string[] = [];
    const page = (await browser.pages())[0] ?? await browser.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on("console", (m) => /Content Security Policy|Refused to/.test(m.text()) && problems.push(m.text()));
    await page.goto(sdk.authorizationUrl!.href);
    assert.ok(page.url().startsWith(provider.issuer), "sent to the team's identity provider");
    await provider.signInPage(page, "ada");
    assert.equal(new URL(page.url()).pathname, "/oauth/consent");
    assert.equal(await text(page, "h1"), "Allow Ada's <i>agent</i>?", "the client's name as text, not markup");
    assert.equal(await page.$("main i"), null);
    assert.match(await text(page, ".consent"), /ada@example\.com[\s\S]*tools/);
    await page.screenshot({ path: `${shots}/oauth-consent.png`, fullPage: true });
    const arrived = callback.next();
    await page.click("button[value=allow]");
    const back = await arrived;
    assert.equal(back.searchParams.get("state"), sdk.authorizationUrl!.searchParams.get("state"));
    await transport.finishAuth(back.searchParams.get("code")!);

    const client = new Client({ name: "agent", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: sdk }));
    assert.ok((await client.listTools()).tools.some((tool) => tool.name === "docs_search"));
    assert.equal(textOf(await client.callTool({ name: "docs_search", arguments: { query: "sso" } })), "found: sso");
    await client.close();

    // The operator's page of grants shows it, and revokes it.
    const operator = await browser.createBrowserContext();
    const console = await operator.newPage();
    console.setDefaultTimeout(15_000);
    await console.goto(`${url}/ui/`);
    await console.type("form.signin input[name=key]", ADMIN_KEY);
    await follow(console, "form.signin button[type=submit]");
    await console.goto(`${url}/ui/oauth`);
    assert.equal(await text(console, "h1"), "MCP sign-ins");
    assert.match(await text(console, "#grants"), /Ada's <i>agent<\/i>[\s\S]*ada@example\.com[\s\S]*tools/);
    await console.screenshot({ path: `${shots}/console-oauth.png`, fullPage: true });
    await follow(console, "#grants form button");
    assert.match(await text(console, ".notice"), /Revoked/);
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const refused = await postMcp(url, ping, { authorization: `Bearer ${sdk.saved.tokens!.access_token}` });
    assert.equal(refused.status, 401);
    await operator.close();
    assert.deepEqual(problems, [], "no script error, no policy refusal");
  },
});

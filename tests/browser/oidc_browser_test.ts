/**
 * @module Single sign-on in a real browser (Chromium, driven by puppeteer-core) against a real OpenID provider on
 * 127.0.0.1: an admin signs in through the provider and revokes a token, the audit trail names her, the people page
 * lists her; a person no rule matches is refused with a page; no page holds a secret. Screenshots go to
 * $MODELGATE_SCREENSHOTS when set, else to a temporary folder removed at the end. Without Chromium it is skipped with
 * the reason, unless CI is set or MODELGATE_CHROMIUM names a browser (see _chromium.ts).
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "puppeteer-core";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY } from "../_helpers.ts";
import { startOidcGateway, startOidcProvider } from "../_oidc_provider.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";

const CHROMIUM = chromiumOnThisMachine();
const ACCOUNTS = {
  ada: { email: "ada@example.com", name: "Ada Lovelace", groups: ["platform-admins"] },
  zed: { email: "zed@elsewhere.test" },
};

/** A page with its script errors collected. */
async function localPage(browser: Browser | Awaited<ReturnType<Browser["createBrowserContext"]>>, problems: string[]) {
  const page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  page.on("pageerror", (error) => problems.push(String(error)));
  return page;
}

/** No name resolves but the loopback address: the provider's own pages ask for a web font from the internet. */
const LOOPBACK_ONLY = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1";

function text(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (element) => element.textContent ?? "");
}

/** Clicks and waits for the page it leads to. */
async function follow(page: Page, selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

const NAME = "single sign-on in a browser: an admin signs in and revokes a token; a person with no role is refused";
Deno.test({
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  fn: ssoTour,
});

async function ssoTour(): Promise<void> {
  if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider(ACCOUNTS);
  await using gw = await startOidcGateway(provider, upstream.url, {
    roles: [
      "{ group: platform-admins, role: admin }",
      "{ domain: example.com, role: member, token_groups: [default] }",
    ],
  });
  const made = await (await gw.admin("POST", "/admin/tokens", { group: "default", name: "laptop" })).json();
  await using chromium = await launchChromium(CHROMIUM.path, { name: "sso", args: [LOOPBACK_ONLY] });
  const { browser, shots } = chromium;
  const problems: string[] = [];
  const pages: string[] = [];
  const page = await localPage(browser, problems);
  const shot = async (name: string) => {
    pages.push(await page.content());
    await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
  };
  await page.goto(`${gw.url}/ui/tokens/${made.token.id}`);
  await shot("sso-sign-in");
  assert.match(await text(page, ".sso a.button"), /Sign in with single sign-on/);
  await follow(page, ".sso a.button");
  assert.ok(page.url().startsWith(provider.issuer), "at the provider's login");
  await provider.signInPage(page, "ada");
  assert.equal(new URL(page.url()).pathname, `/ui/tokens/${made.token.id}`, "back at the page asked for");
  assert.equal(await text(page, "header .who"), "ada@example.com · admin");
  await follow(page, `form[action$="/revoke"] button`);
  assert.match(await text(page, ".notice"), /Revoked/);
  await page.goto(`${gw.url}/ui/audit`);
  await shot("sso-audit");
  assert.match(await text(page, "main"), /ada@example\.com[\s\S]*token\.revoke|token\.revoke[\s\S]*ada@example\.com/);
  await page.goto(`${gw.url}/ui/people`);
  await shot("people");
  assert.match(await text(page, "#people"), /ada@example\.com[\s\S]*admin/);
  await follow(page, "form.signout button");
  assert.equal(await text(page, "h1"), "Sign in");

  // Another browser profile, another person: no rule matches them.
  const other = await browser.createBrowserContext();
  const stranger = await localPage(other, problems);
  await stranger.goto(`${gw.url}/ui/`);
  await Promise.all([stranger.waitForNavigation(), stranger.click(".sso a.button")]);
  await provider.signInPage(stranger, "zed");
  assert.equal(await text(stranger, "h1"), "Not signed in");
  assert.match(await text(stranger, ".notice"), /zed@elsewhere\.test has no role on this gateway/);
  pages.push(await stranger.content());
  await stranger.screenshot({ path: `${shots}/sso-refused.png`, fullPage: true });
  assert.equal((await other.cookies()).filter((c) => c.name.startsWith("modelgate_console")).length, 0);
  await other.close();
  assert.deepEqual(problems, [], "no script error");
  const secrets = [provider.clientSecret, ADMIN_KEY, made.secret, ...Object.values(gw.tokens)];
  for (const secret of secrets) {
    assert.ok(!pages.some((page) => page.includes(secret)), "no page holds a secret");
    assert.ok(!JSON.stringify(gw.logs).includes(secret), "no log line holds a secret");
  }
}

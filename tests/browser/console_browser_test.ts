/**
 * @module The console in a real browser (Chromium from the system's packages, driven by puppeteer-core): sign in,
 * create a token and read its secret, use it through the gateway, find the request in usage and in the log, revoke
 * it, mint an operator key, find both in the audit trail, sign out; a token named like markup stays text. Screenshots of each page go to
 * $MODELGATE_SCREENSHOTS when set, else to a temporary folder removed at the end. Without Chromium it is skipped with the reason, unless CI is set or
 * MODELGATE_CHROMIUM names a browser: then it fails (see _chromium.ts). .ci/run installs Chromium and sets CI.
 */
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { ADMIN_KEY, anthropicMessage, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";
import { follow, text } from "./_page.ts";

const CHROMIUM = chromiumOnThisMachine();
const EVIL_NAME = "<img src=x onerror=alert(1)>";
const ZONE = "America/New_York";

/** Sends one message with `secret` through the gateway; answers the status. */
async function sendMessage(gw: TestGateway, secret: string): Promise<number> {
  const res = await gw.post("/v1/messages", messagesBody(), {
    "x-api-key": secret,
    "x-claude-code-session-id": "browser-session-1",
  });
  await res.body?.cancel();
  return res.status;
}

/** Fills and submits the sign-in form; answers the status of the answer to it. */
async function signIn(page: Page, key: string): Promise<number> {
  await page.type("input[name=key]", key);
  const [response] = await Promise.all([
    page.waitForResponse((res) => res.url().endsWith("/ui/login")),
    follow(page, "form.signin button[type=submit]"),
  ]);
  return response.status();
}

/** Creates a token through the form, expiring at a local time when given; answers its secret as the page shows it. */
async function createToken(page: Page, gw: TestGateway, name: string, expires?: string): Promise<string> {
  await page.goto(`${gw.url}/ui/tokens`);
  await page.click("details.panel summary");
  await page.select("select[name=group]", "default");
  await page.type("input[name=name]", name);
  await page.type("input[name=requests_per_minute]", "60");
  if (expires) {
    await page.$eval(
      "input[name=expires_local]",
      (input, value) => void ((input as unknown as { value: string }).value = value),
      expires,
    );
  }
  await follow(page, "form.grid button[type=submit]");
  assert.equal(await text(page, "h1"), "Token created");
  return (await text(page, "#secret")).trim();
}

const NAME = "the console in a browser: sign in, issue a token, see its request in usage and the log, revoke it";
Deno.test({
  // Deno prints no reason for an ignored test, so the name carries it.
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  fn: browserTour,
});

async function browserTour(): Promise<void> {
  if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
  const executablePath = CHROMIUM.path;
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  await using chromium = await launchChromium(executablePath, { name: "console" });
  const { browser, shots } = chromium;
  const dialogs: string[] = [];
  const problems: string[] = [];
  await browser.defaultBrowserContext().overridePermissions(gw.url, ["clipboard-read", "clipboard-write"]);
  const page = (await browser.pages())[0] ?? await browser.newPage();
  page.setDefaultTimeout(10_000);
  await page.emulateTimezone(ZONE);
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    dialog.dismiss().catch(() => {});
  });
  page.on("pageerror", (error) => problems.push(String(error)));
  // The wrong key's 401 is logged as a failed load too; what must not happen is a script error or a policy refusal.
  page.on(
    "console",
    (message) => /Content Security Policy|Refused to/.test(message.text()) && problems.push(message.text()),
  );
  const shot = (name: string) => page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });

  // A wrong key is refused, and the form says so.
  await page.goto(`${gw.url}/ui/`);
  await shot("sign-in");
  assert.equal(await signIn(page, "not-the-admin-key"), 401);
  assert.match(await text(page, ".notice"), /Wrong admin key/);
  assert.equal(await page.$eval("input[name=key]", (input) => (input as unknown as { value: string }).value), "");
  assert.equal(await signIn(page, ADMIN_KEY), 303);
  assert.equal(page.url(), `${gw.url}/ui/`);
  assert.equal(await text(page, "h1"), "Overview");
  assert.equal(await text(page, "footer [data-zone]"), ZONE, "times are in the operator's time zone");
  const cookies = await browser.cookies();
  assert.deepEqual(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path]), [
    ["modelgate_console", true, "Strict", "/ui"],
  ]);
  const storage = "document.cookie + JSON.stringify(localStorage) + JSON.stringify(sessionStorage)";
  assert.equal(await page.evaluate(storage), "{}{}", "nothing readable by script, nothing in storage");
  await shot("overview");

  // A token made in the page: its secret is shown once, and the copy button copies it.
  // The expiry is typed in the operator's time zone (New York, UTC-5 in January).
  const secret = await createToken(page, gw, "alice", "2030-01-02T03:04");
  assert.match(secret, /^sk-/);
  await page.click("button[data-copy]");
  await page.waitForSelector("[data-copied]:not([hidden])");
  assert.equal(await page.evaluate("navigator.clipboard.readText()"), secret);
  await shot("token-created");
  const [alice] = (await gw.store.listTokens()).filter((t) => t.name === "alice");
  assert.equal(alice.expires_at, "2030-01-02T08:04:00.000Z");

  // A token named like markup is shown as text, and nothing runs.
  await createToken(page, gw, EVIL_NAME);
  await page.goto(`${gw.url}/ui/tokens`);
  assert.equal((await page.$$("#tokens img")).length, 0);
  const names = await page.$$eval("#tokens td:first-child a", (links) => links.map((a) => a.textContent));
  assert.ok(names.includes(EVIL_NAME), JSON.stringify(names));
  await shot("tokens");

  // A real request with the new token, found in the log, which refreshes by itself, and in usage.
  await page.goto(`${gw.url}/ui/requests?every=2`);
  assert.equal(await sendMessage(gw, secret), 200);
  await gw.flush();
  const row = await page.waitForFunction(
    `[...document.querySelectorAll("#log tbody tr")].find((tr) => tr.textContent.includes("alice"))?.textContent`,
    { timeout: 10_000 },
  );
  assert.match(String(await row.jsonValue()), /200[\s\S]*claude-test[\s\S]*alice[\s\S]*browser-session-1/);
  await shot("request-log");
  await page.goto(`${gw.url}/ui/usage?by=token`);
  const rows = await page.$$eval(
    "table tbody tr",
    (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim())),
  );
  const aliceRow = rows.find((cells) => cells[0]?.startsWith("alice"));
  assert.deepEqual(aliceRow?.slice(1, 3), ["1", "0"], JSON.stringify(rows));
  assert.ok((await text(page, "figure.chart .legend")).includes(`alice (${alice.id})`));
  const bars = await page.$$eval("figure.chart svg rect title", (titles) => titles.map((t) => t.textContent ?? ""));
  assert.ok(bars.some((bar) => bar.includes(`alice (${alice.id}): 7 tokens`)), bars.join("\n"));
  await shot("usage");

  // Groups: one made in the page; a config group is read-only with the reason.
  await page.goto(`${gw.url}/ui/groups`);
  await page.click("details.panel summary");
  await page.type("input[name=name]", "research");
  await page.click("input[name=models][value=gpt-test]");
  await follow(page, "form.grid button[type=submit]");
  assert.match(page.url(), /\/ui\/groups\/research\?done=created$/);
  assert.equal((await page.$$("input[name=models]:checked")).length, 1);
  await page.goto(`${gw.url}/ui/groups`);
  await shot("groups");
  await page.goto(`${gw.url}/ui/groups/default`);
  assert.match(await text(page, "main"), /Defined in the config file/);
  await page.goto(`${gw.url}/ui/upstreams`);
  await shot("upstreams");

  // Revoked in the page, the token answers 401 at once.
  await page.goto(`${gw.url}/ui/tokens/${alice.id}`);
  await shot("token");
  await follow(page, "form.inline button.danger");
  assert.match(await text(page, ".notice"), /Revoked/);
  assert.equal(await sendMessage(gw, secret), 401);
  assert.ok(!(await page.content()).includes(secret), "the secret is not shown again");

  // An operator key minted in the page, its expiry typed in the operator's time zone; its secret is shown once.
  await page.goto(`${gw.url}/ui/operators`);
  await page.click("details.panel summary");
  await page.type("input[name=name]", "carol@example.com");
  await page.select("select[name=role]", "viewer");
  await page.$eval(
    "input[name=expires_local]",
    (input) => void ((input as unknown as { value: string }).value = "2030-01-02T03:04"),
  );
  await follow(page, "form.grid button[type=submit]");
  assert.equal(await text(page, "h1"), "Operator key minted");
  const operatorSecret = await text(page, "#secret");
  assert.match(operatorSecret, /^mgk-/);
  const [carol] = (await (await gw.admin("GET", "/admin/operator-keys")).json()).data;
  assert.deepEqual([carol.role, carol.expires_at], ["viewer", "2030-01-02T08:04:00.000Z"]);
  await page.goto(`${gw.url}/ui/operators`);
  assert.ok(!(await page.content()).includes(operatorSecret));
  await shot("operators");

  // The audit trail names the revoke, who made it and what it changed, and never the secret.
  await page.goto(`${gw.url}/ui/audit`);
  const audit = await page.$$eval(
    "table tbody tr",
    (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim() ?? "")),
  );
  const revoke = audit.find((cells) => cells[2] === "token.revoke");
  assert.ok(revoke, JSON.stringify(audit));
  assert.match(revoke[1], /^admin key\s*console/);
  assert.equal(revoke[3], alice.id);
  assert.match(revoke[4], /disabled: false → true/);
  assert.ok(!(await page.content()).includes(secret) && !(await page.content()).includes(ADMIN_KEY));
  await shot("audit");

  // Signed out, the pages ask for the key again.
  await follow(page, "form.signout button");
  assert.equal(await text(page, "h1"), "Sign in");
  await page.goto(`${gw.url}/ui/tokens`);
  assert.equal(await text(page, "h1"), "Sign in");
  assert.deepEqual(await browser.cookies(), []);
  assert.deepEqual(dialogs, [], "no dialog opened");
  assert.deepEqual(problems, [], "no script error and no policy violation");
}

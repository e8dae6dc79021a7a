/**
 * @module A member in a real browser (Chromium from the system's packages, driven by puppeteer-core): they land on My
 * tokens with only their own pages in the navigation, create a token whose secret is shown once, use it, revoke it
 * (it answers 401 at once), see My usage, and are refused an operator's page. Screenshots of each page go to
 * $MODELGATE_SCREENSHOTS when set, else to a temporary folder removed at the end. Skipped without Chromium unless CI
 * is set or MODELGATE_CHROMIUM names a browser (see _chromium.ts).
 */
import assert from "node:assert/strict";
import { signInAs } from "../_console.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";
import { follow, text } from "./_page.ts";

const CHROMIUM = chromiumOnThisMachine();
const ALICE = { email: "alice@example.com", role: "member" as const, token_groups: ["default", "auto", "capped"] };
const CAPPED = "  - { name: capped, listing: anthropic, models: [claude-test], limits: { tokens_per_day: 100000 } }";

/** Sends one message with `secret` through the gateway; answers the status. */
async function sendMessage(gw: TestGateway, secret: string): Promise<number> {
  const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  await res.body?.cancel();
  return res.status;
}

const NAME = "a member in a browser: lands on My tokens, mints a token, sees its secret once, revokes it";
Deno.test({
  // Deno prints no reason for an ignored test, so the name carries it.
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  fn: memberTour,
});

async function memberTour(): Promise<void> {
  if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true, extraGroups: CAPPED });
  // A token of Alice's made earlier and one of Bob's, both used: only Alice's is hers to see.
  const earlier = await gw.store.createToken({ group: "default", name: "alice-desktop", owner: ALICE.email });
  const bob = await gw.store.createToken({ group: "default", name: "bob-laptop", owner: "bob@example.com" });
  for (const secret of [earlier.secret, earlier.secret, bob.secret]) assert.equal(await sendMessage(gw, secret), 200);
  await gw.flush();
  const [name, value] = (await signInAs(gw, ALICE)).split(/=(.*)/s);
  await using chromium = await launchChromium(CHROMIUM.path, { name: "member" });
  const { browser, shots } = chromium;
  const problems: string[] = [];
  const page = (await browser.pages())[0] ?? await browser.newPage();
  page.setDefaultTimeout(10_000);
  page.on("pageerror", (error) => problems.push(String(error)));
  page.on("dialog", (dialog) => problems.push(`dialog: ${dialog.message()}`));
  const shot = (file: string) => page.screenshot({ path: `${shots}/${file}.png`, fullPage: true });
  await browser.setCookie({ name, value, domain: "127.0.0.1", path: "/ui", httpOnly: true, sameSite: "Strict" });

  // Signed in, the console's address is their own tokens, and the navigation holds their pages only.
  await page.goto(`${gw.url}/ui/`);
  assert.equal(page.url(), `${gw.url}/ui/my/tokens`);
  assert.equal(await text(page, "h1"), "My tokens");
  assert.deepEqual(await page.$$eval("nav a", (links) => links.map((a) => a.textContent?.trim())), [
    "My tokens",
    "My usage",
  ]);
  const listed = await page.$$eval("#tokens tbody tr", (rows) => rows.map((tr) => tr.textContent ?? ""));
  assert.equal(listed.length, 1);
  assert.match(listed[0], /alice-desktop/);
  await shot("my-tokens");

  // A token minted in the page: the secret is shown once, and works.
  await page.click("details.panel summary");
  assert.match(await text(page, "details.panel p"), /capped: 100K tokens\/day/, "the group's limits are named");
  await page.select("select[name=group]", "auto");
  await page.type("input[name=name]", "alice-laptop");
  await shot("my-tokens-new");
  await follow(page, "form.grid button[type=submit]");
  assert.equal(await text(page, "h1"), "Token created");
  const secret = (await text(page, "#secret")).trim();
  assert.match(secret, /^sk-/);
  await shot("my-token-created");
  const made = (await gw.store.listTokens()).find((t) => t.name === "alice-laptop")!;
  assert.deepEqual([made.owner, made.group], [ALICE.email, "auto"]);
  assert.equal(await sendMessage(gw, secret), 200);

  // Back on the list the secret is gone; revoked there, the token answers 401 at once.
  await page.goto(`${gw.url}/ui/my/tokens`);
  assert.ok(!(await page.content()).includes(secret), "the secret is not shown again");
  await follow(page, `form[action="/ui/my/tokens/${made.id}/revoke"] button`);
  assert.match(await text(page, ".notice"), /Revoked/);
  assert.equal(await sendMessage(gw, secret), 401);
  await shot("my-tokens-revoked");

  await gw.flush();
  await page.goto(`${gw.url}/ui/my/usage`);
  assert.equal(await text(page, "h1"), "My usage");
  const cards = await page.$$eval(".card .value", (values) => values.map((v) => v.textContent));
  assert.equal(cards[0], "3 requests", "Alice's three requests, not Bob's");
  assert.ok(!(await page.content()).includes("bob-laptop"));
  await shot("my-usage");

  // An operator's page is refused, and the refusal shows only the member's own links.
  const refused = await page.goto(`${gw.url}/ui/groups`);
  assert.equal(refused?.status(), 403);
  assert.match(await text(page, ".notice"), /may open only their own tokens and usage/);
  await shot("member-refused");
  assert.deepEqual(problems, [], "no script error and no dialog");
}

/**
 * @module `modelgate login` with the person's step done in a real browser (Chromium, driven by puppeteer-core) on the
 * real OpenID provider's pages: the page the CLI prints is opened, the code confirmed and the person signed in, and
 * the CLI keeps a token that works. Without Chromium it is skipped with the reason, unless CI is set or
 * MODELGATE_CHROMIUM names a browser (see _chromium.ts).
 */
import assert from "node:assert/strict";
import { personSetup } from "../_cli.ts";
import { deviceSetup } from "../_device.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody } from "../_helpers.ts";
import { startOidcProvider, type TestProvider } from "../_oidc_provider.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";

const CHROMIUM = chromiumOnThisMachine();
/** No name resolves but the loopback address: the provider's own pages ask for a web font from the internet. */
const LOOPBACK_ONLY = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1";

/** Opens `url` in Chromium at `path` and does the person's part there as `login`: confirm the code, sign in. */
async function confirmInBrowser(path: string, provider: TestProvider, url: string, login: string): Promise<string> {
  await using chromium = await launchChromium(path, { name: "device", args: [LOOPBACK_ONLY] });
  const { browser } = chromium;
  const page = (await browser.pages())[0] ?? await browser.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(url);
  // The provider posts the code from the URL on its own and asks the person to confirm it.
  const confirm = await page.waitForSelector('button[form="op.deviceConfirmForm"]');
  await Promise.all([page.waitForNavigation(), confirm!.click()]);
  await provider.signInPage(page, login);
  return await page.$eval("body", (body) => body.textContent ?? "");
}

const NAME = "modelgate login: the person confirms the code and signs in in a browser, and the CLI's token works";
Deno.test({
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  async fn() {
    if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
    const chromium = CHROMIUM.path;
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
    await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
    const setup = await deviceSetup(provider, upstream.url);
    await using gw = setup.gw;
    await using person = await personSetup();
    let page = "";
    const onErr = (line: string) => {
      if (page || !line.startsWith(`${provider.issuer}/`)) return;
      page = "opening";
      confirmInBrowser(chromium, provider, line, "ada").then((text) => {
        page = text;
        setup.confirmed.resolve();
      }, setup.confirmed.reject);
    };
    const login = await person.cli(["login", "--gateway", gw.url], onErr, setup.seams);
    assert.equal(login.code, 0, login.err);
    assert.match(page, /Device signed in/);
    const saved = JSON.parse(await Deno.readTextFile(person.credentials));
    assert.equal(saved.owner, "ada@example.com");
    const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": saved.token });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  },
});

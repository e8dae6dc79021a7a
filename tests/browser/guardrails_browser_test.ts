/**
 * @module A group's guardrails in the console, in a real browser: its rules and the chart of hits per rule, after
 * requests that hit them, with no script error or policy refusal. Its screenshot goes to $MODELGATE_SCREENSHOTS when
 * set, else to a temporary folder removed at the end; without Chromium it is skipped as the other browser tests are.
 */
import assert from "node:assert/strict";
import { echoing } from "../_echo_upstream.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { guardedConfig } from "../_guard_config.ts";
import { ADMIN_KEY, startGateway } from "../_helpers.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";
import { follow, text } from "./_page.ts";

const CHROMIUM = chromiumOnThisMachine();
const NAME = "the console in a browser: a group's guardrails and the hits per rule";

Deno.test({
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  async fn() {
    if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
    await using upstream = fakeUpstream();
    echoing(upstream);
    await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url), admin: true });
    for (const content of ["key AKIAQWERTYUIOPASDFGH", "mail jane.doe@acme-corp.io and 4111 1111 1111 1111"]) {
      const res = await gw.post("/v1/messages", {
        model: "claude-test",
        max_tokens: 8,
        messages: [{ role: "user", content }],
      });
      await res.body?.cancel();
    }
    await gw.flush();
    await using chromium = await launchChromium(CHROMIUM.path, { name: "console" });
    const { browser, shots } = chromium;
    const problems: string[] = [];
    const page = (await browser.pages())[0] ?? await browser.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on(
      "console",
      (message) => /Content Security Policy|Refused to/.test(message.text()) && problems.push(message.text()),
    );
    await page.goto(`${gw.url}/ui/`);
    await page.type("input[name=key]", ADMIN_KEY);
    await follow(page, "form.signin button[type=submit]");
    await page.goto(`${gw.url}/ui/groups/default`);
    assert.equal(await text(page, "h1"), "Group default");
    const rows = await page.$$eval(
      "#guardrails tbody tr",
      (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim() ?? "")),
    );
    assert.deepEqual(rows, [
      ["no-secrets", "secrets", "input, output, tools", "mask, restore"],
      ["pii", "pii", "input", "mask"],
    ]);
    const chart = await page.$eval("section.panel figure.chart", (figure) => figure.textContent ?? "");
    assert.match(chart, /no-secrets/);
    assert.match(chart, /pii/);
    await page.screenshot({ path: `${shots}/group-guardrails.png`, fullPage: true });
    assert.deepEqual(problems, []);
  },
});

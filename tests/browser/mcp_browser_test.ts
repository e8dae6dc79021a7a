/**
 * @module The console's MCP page in a real browser (Chromium from the system's packages, driven by puppeteer-core):
 * signed in with the admin key, it shows the servers, their state, their tools and the groups that may call each,
 * without a script error or a policy refusal. Its screenshot goes to $MODELGATE_SCREENSHOTS when set, else to a
 * temporary folder removed at the end; without Chromium it is skipped as the console's tour is (see _chromium.ts).
 */
import assert from "node:assert/strict";
import { ADMIN_KEY } from "../_helpers.ts";
import { startMcpGateway } from "../_mcp_gateway.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";
import { follow, text } from "./_page.ts";

const CHROMIUM = chromiumOnThisMachine();
const NAME = "the MCP page in a browser: servers, their state, their tools and who may call them";

Deno.test({
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  async fn() {
    if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
    await using mcp = await startMcpGateway({ admin: true });
    // One call, so the page has something of each kind to show.
    await (await mcp.connect(mcp.tokens.all)).callTool({ name: "docs_search", arguments: { query: "q" } });
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
    await page.goto(`${mcp.gateway.url}/ui/`);
    await page.type("input[name=key]", ADMIN_KEY);
    await follow(page, "form.signin button[type=submit]");
    await page.goto(`${mcp.gateway.url}/ui/mcp`);
    assert.equal(await text(page, "h1"), "MCP servers");
    const rows = await page.$$eval(
      "table tbody tr",
      (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim() ?? "")),
    );
    assert.ok(rows.some((cells) => cells[0] === "docs" && cells[1] === "Streamable HTTP"), JSON.stringify(rows));
    assert.ok(rows.some((cells) => cells[0] === "local" && cells[1] === "stdio"));
    assert.ok(rows.some((cells) => cells[0] === "docs_search" && cells[3] === "all, searchers, tools"));
    assert.ok(
      rows.some((cells) => cells[0] === "searchers" && cells[1] === "docs tools: search"),
      JSON.stringify(rows),
    );
    await page.screenshot({ path: `${shots}/mcp.png`, fullPage: true });
    assert.deepEqual(problems, []);
  },
});

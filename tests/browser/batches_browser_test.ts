/**
 * The console's Batches page in a real browser (Chromium from the system's packages): every token's batches with
 * their state, counts, owner, models, deployment and age, and a cancel that reaches the provider. Screenshots go to
 * $MODELGATE_SCREENSHOTS when set. Skipped without Chromium, as the other browser tests are.
 */
import assert from "node:assert/strict";
import { ADMIN_KEY } from "../_helpers.ts";
import { batchRig, chatLines } from "../_batch_rig.ts";
import { chromiumOnThisMachine } from "./_chromium.ts";
import { launchChromium } from "./_launch.ts";
import { follow, text } from "./_page.ts";

const CHROMIUM = chromiumOnThisMachine();
const NAME = "the console's Batches page: every batch with its state, counts, owner and age, and a cancel";

Deno.test({
  name: CHROMIUM.action === "skip" ? `${NAME} (skipped: ${CHROMIUM.reason})` : NAME,
  ignore: CHROMIUM.action === "skip",
  async fn() {
    if (CHROMIUM.action !== "run") throw new Error(CHROMIUM.reason);
    await using rig = await batchRig({ gateway: { admin: true } });
    const ask = (id: string) => ({
      custom_id: id,
      params: { model: "claude-batch", max_tokens: 5, messages: [{ role: "user" as const, content: id }] },
    });
    const done = await rig.anthropic().messages.batches.create({ requests: [ask("a"), ask("b")] });
    rig.api.advance();
    await rig.anthropic().messages.batches.retrieve(done.id);
    rig.clock.now += 3 * 3600_000;
    const running = await rig.anthropic().messages.batches.create({ requests: [ask("c")] });
    const file = await rig.openai(rig.other).files.create({
      file: new File([chatLines(["x"])], "in.jsonl"),
      purpose: "batch",
    });
    await rig.openai(rig.other).batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
    });
    rig.clock.now += 5 * 60_000;
    await using chromium = await launchChromium(CHROMIUM.path, { name: "batches" });
    const page = (await chromium.browser.pages())[0] ?? await chromium.browser.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${rig.gw.url}/ui/batches`);
    await page.type("input[name=key]", ADMIN_KEY);
    await follow(page, "form.signin button[type=submit]");
    await page.goto(`${rig.gw.url}/ui/batches`);
    assert.equal(await text(page, "h1"), "Batches");
    const rows = await page.$$eval("tbody tr", (trs) => trs.map((tr) => tr.textContent!.replace(/\s+/g, " ").trim()));
    assert.equal(rows.length, 3);
    assert.match(rows[2], new RegExp(`${done.id} ?Message Batches ended succeeded 2 .*claude-batch anth 3 h`));
    assert.match(rows.find((row) => row.includes(running.id))!, /in_progress processing 1 .* 5 min Cancel/);
    assert.match(
      rows.find((row) => row.includes("Batch API"))!,
      /validating total 1 .*gpt-batch oai/,
    );
    await page.screenshot({ path: `${chromium.shots}/batches.png`, fullPage: true });
    await follow(page, `form[action="/ui/batches/${running.id}/cancel"] button`);
    assert.match(await text(page, ".notice"), /Cancel asked/);
    const after = await page.$$eval("tbody tr", (trs) => trs.map((tr) => tr.textContent!.replace(/\s+/g, " ").trim()));
    assert.match(after.find((row) => row.includes(running.id))!, /canceling/);
    await page.screenshot({ path: `${chromium.shots}/batches-canceled.png`, fullPage: true });
  },
});

/**
 * @module The worked example of docs/spend.md, run as written: its config (pointed at a fake upstream), its usage,
 * and every figure the page states about the cost and the budget.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, limitCounter, startGateway } from "../_helpers.ts";
import { frozenClock } from "../_spend.ts";

const DOC = Deno.readTextFileSync(new URL("../../docs/spend.md", import.meta.url));

/** The fenced block of `lang` that follows `after` in the page. */
function block(lang: string, after: string): string {
  const from = DOC.indexOf(after);
  assert.ok(from >= 0, `docs/spend.md has no "${after}"`);
  const match = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(DOC.slice(from));
  assert.ok(match, `docs/spend.md has no ${lang} block after "${after}"`);
  return match[1];
}

/** Asserts the page states `text` (wherever its lines break), so the figure checked is the figure a reader sees. */
function stated(text: string): void {
  assert.ok(DOC.replace(/\s+/g, " ").includes(text), `docs/spend.md does not say ${JSON.stringify(text)}`);
}

Deno.test("docs/spend.md: the worked example's cost and budget come out as the page says", async () => {
  await using upstream = fakeUpstream();
  const usage = JSON.parse(block("json", "## A worked example"));
  upstream.routes.set("POST /v1/messages", () => jsonReply({ ...anthropicMessage(), usage }));
  const yaml = block("yaml", "## A worked example")
    .replace("https://api.anthropic.com/v1", `${upstream.url}/v1`)
    .replace("currency:", 'kv_path: ":memory:"\ncurrency:');
  await using gw = await startGateway(upstream.url, {
    configYaml: yaml,
    admin: true,
    env: { ANTHROPIC_API_KEY: "upstream-key" },
    now: frozenClock(),
  });
  const { secret } = await gw.store.createToken({ group: "interns" });
  const body = { model: "sonnet", max_tokens: 1024, messages: [{ role: "user", content: "Hi" }] };
  const statuses: number[] = [];
  let refusal = "";
  for (let i = 0; i < 9; i++) {
    const res = await gw.post("/v1/messages", body, { "x-api-key": secret });
    statuses.push(res.status);
    if (res.status === 429) refusal = (await res.json()).error.message;
    else await res.body?.cancel();
    await gw.deps.operator.limiter.settled();
    if (i === 6) {
      const day = gw.deps.now().toISOString().slice(0, 10);
      const spent = await limitCounter(gw.store.kv, ["limit", "group", "interns", "cost", "day", day]);
      assert.equal(spent, 949_200_000_000n);
      stated("After seven requests the day's spend is 0.9492");
    }
  }
  stated("the eighth fits");
  stated("The ninth request gets a 429");
  assert.deepEqual(statuses, [...Array(8).fill(200), 429]);
  const message = refusal.slice(0, refusal.indexOf("; it resets"));
  stated(message);
  stated("0.01539 USD");
  assert.match(message, /estimated at 0\.01539 USD/);
  await gw.flush();

  const entry = (await (await gw.admin("GET", "/admin/requests?status=200&limit=1")).json()).data[0];
  stated(`"cost": "${entry.cost}"`);
  assert.equal(entry.cost, "0.1356");
  const usageRows = await (await gw.admin("GET", "/admin/usage?by=group&since=1d")).json();
  assert.equal(usageRows.currency, "USD");
  const [interns] = usageRows.data;
  assert.deepEqual([interns.key, interns.requests, interns.cost], ["interns", 9, "1.0848"]);
  stated(`"cost": "${interns.cost}"`);
});

Deno.test("docs/spend.md: every YAML example is a config that loads", () => {
  const examples = [...DOC.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1]);
  assert.equal(examples.length, 2);
  for (const yaml of examples) {
    const config = parseConfig(yaml, "docs/spend.md");
    assert.ok(config.upstreams[0].models.some((model) => typeof model !== "string" && model.price));
  }
});

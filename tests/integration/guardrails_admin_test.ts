/**
 * @module Guardrails on groups made through the admin API: `guardrails` on create and update checked against the
 * config's rules (a 400 naming the field), and a token of such a group has its requests masked, with the official SDK,
 * as a config group's are, until an update clears the group's rules.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { echoing } from "../_echo_upstream.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { guardedConfig } from "../_guard_config.ts";
import { deadlineFetch, startGateway } from "../_helpers.ts";

const KEY = "sk_live_7NLRwHlZvuCjp0xEFZo1zcfI";
const PLACEHOLDER = /\[REDACTED:stripe_key:[0-9a-f]{6}\]/;

const BAD: { name: string; method: string; path: string; body: unknown; param: string; says: RegExp }[] = [
  {
    name: "an unknown rule on create",
    method: "POST",
    path: "/admin/groups",
    body: { name: "g", listing: "anthropic", models: [], guardrails: ["no-secrets", "polcy"] },
    param: "guardrails[1]",
    says: /no guardrail is named "polcy"/,
  },
  {
    name: "a rule named twice",
    method: "POST",
    path: "/admin/groups",
    body: { name: "g", listing: "anthropic", models: [], guardrails: ["pii", "pii"] },
    param: "guardrails[1]",
    says: /named twice/,
  },
  {
    name: "a name that is not a string",
    method: "POST",
    path: "/admin/groups",
    body: { name: "g", listing: "anthropic", models: [], guardrails: [7] },
    param: "guardrails[0]",
    says: /string/,
  },
  {
    name: "an unknown rule on update",
    method: "PATCH",
    path: "/admin/groups/team",
    body: { guardrails: ["nope"] },
    param: "guardrails[0]",
    says: /no guardrail is named "nope"/,
  },
];

Deno.test("admin groups' guardrails: each bad name is a 400 naming the field", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url), admin: true });
  const team = await gw.admin("POST", "/admin/groups", { name: "team", listing: "anthropic", models: ["claude-test"] });
  assert.equal(team.status, 201);
  await team.body?.cancel();
  for (const bad of BAD) {
    const res = await gw.admin(bad.method, bad.path, bad.body);
    const { error } = await res.json();
    assert.equal(res.status, 400, bad.name);
    assert.equal(error.param, bad.param, bad.name);
    assert.match(error.message, bad.says, bad.name);
  }
  const groups = (await (await gw.admin("GET", "/admin/groups")).json()).data as { name: string }[];
  assert.ok(!groups.some((group) => group.name === "g"), "a refused group was made");
});

Deno.test("admin groups' guardrails: a token of the group has its key masked on input and restored, until an update clears the rules", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url), admin: true });
  const made = await gw.admin("POST", "/admin/groups", {
    name: "team",
    listing: "anthropic",
    models: ["claude-test"],
    guardrails: ["no-secrets"],
  });
  assert.equal(made.status, 201);
  assert.deepEqual((await made.json()).guardrails, ["no-secrets"]);
  const { secret } = await (await gw.admin("POST", "/admin/tokens", { group: "team" })).json();
  const client = new Anthropic({ apiKey: secret, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const ask = () =>
    client.messages.create({ model: "claude-test", max_tokens: 50, messages: [{ role: "user", content: KEY }] });
  const answer = await ask();
  assert.ok(JSON.stringify(answer.content).includes(KEY), "the client gets its key back");
  assert.match(upstream.requests[0].raw, PLACEHOLDER);
  assert.ok(!upstream.requests[0].raw.includes(KEY), "the upstream got the key");
  const logged = gw.exchanges.find((exchange) => exchange.guardrails?.length)!;
  assert.deepEqual(logged.guardrails, [{
    rule: "no-secrets",
    kind: "stripe_key",
    action: "mask",
    scope: "input",
    count: 1,
  }]);

  const cleared = await gw.admin("PATCH", "/admin/groups/team", { guardrails: null });
  assert.equal(cleared.status, 200);
  assert.equal((await cleared.json()).guardrails, undefined);
  await ask();
  assert.ok(upstream.requests[1].raw.includes(KEY), "a group without rules is left alone");
});

Deno.test("admin groups' guardrails: a group naming a rule the config has since dropped has its requests refused, not let by", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  using kv = await Deno.openKv(":memory:");
  let secret: string;
  {
    await using before = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url), admin: true, kv });
    const made = await before.admin("POST", "/admin/groups", {
      name: "team",
      listing: "anthropic",
      models: ["claude-test"],
      guardrails: ["no-secrets"],
    });
    await made.body?.cancel();
    secret = (await (await before.admin("POST", "/admin/tokens", { group: "team" })).json()).secret;
  }
  // The next start's config has no rule of that name.
  await using after = await startGateway(upstream.url, { kv });
  const client = new Anthropic({ apiKey: secret, baseURL: after.url, maxRetries: 0, fetch: deadlineFetch() });
  const refused = await client.messages.create({
    model: "claude-test",
    max_tokens: 50,
    messages: [{ role: "user", content: KEY }],
  }).catch((err) => err);
  assert.ok(refused instanceof Anthropic.APIError, String(refused));
  assert.equal(refused.status, 503);
  assert.match(refused.message, /names guardrail \\?"no-secrets\\?", which this gateway.s config does not define/);
  assert.equal(upstream.requests.length, 0, "the upstream got the request");
});

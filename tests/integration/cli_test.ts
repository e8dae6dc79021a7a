/** @module The CLI's operator commands against a KV file, alone and next to a running gateway sharing it. */
import assert from "node:assert/strict";
import { cliSetup } from "../_cli.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

Deno.test("token create, update and list through the CLI, with limits merged flag by flag", async () => {
  await using upstream = fakeUpstream();
  await using setup = await cliSetup(upstream.url);
  const created = await setup.cli("token create --group default --name ci --requests-per-minute 5 --json");
  assert.equal(created.code, 0);
  const { token, secret } = JSON.parse(created.out);
  assert.match(secret, /^sk-/);
  assert.deepEqual(token.limits, { requests_per_minute: 5 });
  const updated = await setup.cli(`token update ${token.id} --tokens-per-day 1000 --disable --json`);
  assert.deepEqual(JSON.parse(updated.out).limits, { requests_per_minute: 5, tokens_per_day: 1000 });
  assert.equal(JSON.parse(updated.out).disabled, true);
  const listed = await setup.cli("token list");
  assert.match(listed.out, /LIMITS/);
  assert.match(listed.out, /revoked\s+rpm=5 tpd=1000/);
  assert.ok(!listed.out.includes(secret));
  await assert.rejects(
    setup.cli(`token update ${token.id} --tokens-per-day lots`),
    /limits\.tokens_per_day: /,
  );
  await assert.rejects(setup.cli("token create --group nope"), /group: no group "nope"/);
});

Deno.test("group create, update and delete through the CLI; config groups stay read-only", async () => {
  await using upstream = fakeUpstream();
  await using setup = await cliSetup(upstream.url);
  const created = await setup.cli("group create team --listing openai --models gpt-test,claude-test");
  assert.equal(created.code, 0);
  await setup.cli("group update team --tokens-per-month 100000");
  const groups = JSON.parse((await setup.cli("group list --json")).out);
  assert.deepEqual(groups.find((g: { name: string }) => g.name === "team"), {
    name: "team",
    listing: "openai",
    models: ["gpt-test", "claude-test"],
    limits: { tokens_per_month: 100000 },
  });
  await assert.rejects(setup.cli("group update default --models gpt-test"), /config file/);
  await assert.rejects(setup.cli("group create bad --listing openai --models nope"), /models\[0\]: /);
  assert.equal((await setup.cli("group delete team")).code, 0);
  assert.ok(!(await setup.cli("group list")).out.includes("team"));
});

Deno.test("group guardrails through the CLI: named from the config's rules, checked, and cleared", async () => {
  await using upstream = fakeUpstream();
  const extraYaml = "guardrails:\n  - { name: no-secrets, detect: [secrets], action: mask }\n";
  await using setup = await cliSetup(upstream.url, { extraYaml });
  await setup.cli("group create team --listing openai --models gpt-test --guardrails no-secrets");
  const team = async () =>
    JSON.parse((await setup.cli("group list --json")).out).find((g: { name: string }) => g.name === "team");
  assert.deepEqual((await team()).guardrails, ["no-secrets"]);
  await assert.rejects(setup.cli("group update team --guardrails no-secrets,polcy"), /guardrails\[1\]: no guardrail/);
  await setup.cli("group update team --models gpt-test,claude-test");
  assert.deepEqual((await team()).guardrails, ["no-secrets"], "an update that does not name them keeps them");
  assert.equal((await setup.cli("group update team --clear-guardrails")).code, 0);
  assert.equal((await team()).guardrails, undefined);
});

Deno.test("every operator command stops with the gateway's message when its KV folder cannot be one", async () => {
  await using upstream = fakeUpstream();
  await using setup = await cliSetup(upstream.url);
  await Deno.writeTextFile(`${setup.dir}/taken`, "");
  setup.env.MODELGATE_KV = `${setup.dir}/taken/kv.sqlite`;
  const lines = [
    "token create --group default",
    "token list",
    "token get tok_1",
    "token update tok_1 --name n",
    "token revoke tok_1",
    "group list",
    "group create g --listing openai --models gpt-test",
    "group update g --models gpt-test",
    "group delete g",
    "usage",
    "usage log",
    "response delete resp_1",
    "response purge --token tok_1",
  ];
  for (const line of lines) {
    await assert.rejects(setup.cli(line), (err: Error) => {
      assert.match(
        err.message,
        /^Cannot open KV ".*\/taken\/kv\.sqlite" \(from \$MODELGATE_KV\): ".*\/taken" is not a folder/,
      );
      assert.match(err.message, /set MODELGATE_KV to a file in a folder it may write$/);
      return true;
    }, line);
  }
  assert.equal(setup.opened(), 0, "no command went on as if its KV were open");
  setup.env.MODELGATE_KV = setup.kvPath;
  assert.equal((await setup.cli("group list")).code, 0);
  assert.equal(setup.opened(), 1, "a command that opens its KV says so once (main.ts then drops write permission)");
});

Deno.test("a CLI revocation reaches a running gateway sharing the KV file, and the CLI reads its usage", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using setup = await cliSetup(upstream.url);
  const { token, secret } = JSON.parse((await setup.cli("token create --group default --json")).out);
  assert.equal(token.name, token.id, "a token created without --name is named after its id");
  const kv = await Deno.openKv(setup.kvPath);
  try {
    await using gw = await startGateway(upstream.url, { kv });
    const ok = await gw.post("/v1/messages", messagesBody(), {
      "x-api-key": secret,
      "x-claude-code-session-id": "s-9",
    });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    await gw.flush();

    const usage = JSON.parse((await setup.cli("usage --by session --since 1d --json")).out);
    assert.deepEqual(usage.data.map((r: Record<string, unknown>) => [r.key, r.requests, r.total_tokens]), [[
      "s-9",
      1,
      7,
    ]]);
    const table = (await setup.cli("usage --by token")).out;
    assert.match(table, new RegExp(`${token.id}\\s+1\\s+0\\s+0\\s+5\\s+2`));
    const log = JSON.parse((await setup.cli(`usage log --token ${token.id} --json`)).out);
    assert.equal(log[0].session_id, "s-9");
    // The table names the deployment (model and upstream) that served each request.
    const logTable = (await setup.cli(`usage log --token ${token.id}`)).out;
    assert.match(logTable, /MODEL\s+UPSTREAM\s+STATUS\s+INPUT\s+CACHED/);
    assert.match(logTable, /claude-test\s+anth\s+200\s+5\s+0\s+2\s+unpriced\s+yes/);
    // The log filters by the upstream that served a request, and refuses a pin outcome it does not know by name.
    const served = JSON.parse((await setup.cli(`usage log --upstream anth --json`)).out);
    assert.equal(served.length, 1);
    assert.deepEqual(JSON.parse((await setup.cli(`usage log --upstream other --json`)).out), []);
    assert.deepEqual(JSON.parse((await setup.cli(`usage log --affinity moved --json`)).out), []);
    await assert.rejects(setup.cli(`usage log --affinity sometimes`), /affinity: Invalid option/);

    assert.equal((await setup.cli(`token revoke ${token.id}`)).code, 0);
    const started = Date.now();
    await gw.deps.operator.credentials.refreshed();
    const refused = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
    assert.ok(Date.now() - started < 1000);
  } finally {
    kv.close();
  }
});

Deno.test("response delete and response purge remove what a running gateway stored", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using setup = await cliSetup(upstream.url);
  const kv = await Deno.openKv(setup.kvPath);
  try {
    await using gw = await startGateway(upstream.url, { kv });
    const ask = async (secret: string) => {
      const res = await gw.post("/v1/responses", { model: "claude-test", input: "Hi" }, { "x-api-key": secret });
      return (await res.json()).id as string;
    };
    const get = (secret: string, id: string) =>
      fetch(`${gw.url}/v1/responses/${id}`, { headers: { "x-api-key": secret } }).then(async (res) => {
        await res.body?.cancel();
        return res.status;
      });
    const [one, two] = [await ask(gw.tokens.oa), await ask(gw.tokens.oa)];
    const other = await ask(gw.tokens.auto);
    const deleted = await setup.cli(`response delete ${one}`);
    assert.equal(deleted.code, 0);
    assert.match(deleted.err, new RegExp(`Deleted response ${one} of token tok_`));
    assert.deepEqual([await get(gw.tokens.oa, one), await get(gw.tokens.oa, two)], [404, 200]);
    await assert.rejects(setup.cli(`response delete ${one}`), new RegExp(`Response "${one}" does not exist`));
    const tokenId = (await gw.store.findToken(gw.tokens.oa))!.id;
    const purged = await setup.cli(`response purge --token ${tokenId}`);
    assert.match(purged.err, /Deleted 1 stored response\(s\)/);
    assert.deepEqual([await get(gw.tokens.oa, two), await get(gw.tokens.auto, other)], [404, 200]);
    assert.equal((await setup.cli("response purge")).code, 2, "purge names the token it empties");
  } finally {
    kv.close();
  }
});

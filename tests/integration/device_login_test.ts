/**
 * @module `modelgate login` through the gateway's device authorization grant, with a real OpenID provider on
 * 127.0.0.1 whose user step the test completes over HTTP as an account: the token it saves answers a real
 * /v1/messages call (from a command `modelgate run` starts) and belongs to the person's email; a person no rule
 * admits is refused; `logout` ends it. The CLI's waits move the gateway's clock instead of spending time.
 */
import assert from "node:assert/strict";
import { literal, personSetup, programNamed } from "../_cli.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { confirmAs, deviceSetup } from "../_device.ts";
import { anthropicMessage } from "../_helpers.ts";
import { startOidcProvider } from "../_oidc_provider.ts";

Deno.test("modelgate login signs in through the provider and keeps a token of the person's that works", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage("Hi from the gateway")));
  await using provider = await startOidcProvider({ ada: { email: "Ada@Example.com", groups: ["eng"] } });
  const setup = await deviceSetup(provider, upstream.url);
  await using gw = setup.gw;
  await using person = await personSetup();

  const login = await person.cli(
    ["login", "--gateway", `${gw.url}/v1`],
    confirmAs(provider, "ada", setup.confirmed),
    setup.seams,
  );
  assert.equal(login.code, 0, login.err);
  const lines = login.err.split("\n");
  const url = lines.find((line) => line.startsWith(provider.issuer));
  assert.ok(url, login.err);
  assert.match(url, /\?user_code=[A-Z]{4}-?[A-Z]{4}$/, "the code is in the URL, alone on its line");
  assert.deepEqual(setup.waits, [5000], "the first poll waits the provider's interval (RFC 8628's default of 5 s)");
  assert.match(
    login.err,
    /Signed in to http:\/\/127\.0\.0\.1:\d+ as ada@example\.com: token tok_\w+ in group "default"/,
  );
  const next = literal(programNamed("modelgate"));
  assert.match(login.err, new RegExp(`\nNow run a tool with it: ${next} run -- claude$`), "as the installed command");

  const saved = JSON.parse(await Deno.readTextFile(person.credentials));
  assert.equal((await Deno.stat(person.credentials)).mode! & 0o777, 0o600);
  assert.deepEqual([saved.gateway, saved.owner, saved.group], [gw.url, "ada@example.com", "default"]);
  const record = await gw.store.getToken(saved.token_id);
  assert.equal(record?.owner, "ada@example.com");
  assert.equal(record?.expires_at, saved.expires_at);
  assert.equal(Date.parse(saved.expires_at), setup.seams.now() + 90 * 86_400_000, "a login's token lasts 90 days");
  const trail = await (await gw.admin("GET", "/admin/audit?action=token.create")).json();
  assert.deepEqual([trail.data[0].actor, trail.data[0].target], ["ada@example.com", saved.token_id]);

  // The token answers a real call, made by a command `run` started with the login's variables.
  const answer = `${person.dir}/answer.json`;
  const script = `const r = await fetch(Deno.env.get("ANTHROPIC_BASE_URL") + "/v1/messages", { method: "POST", ` +
    `headers: { authorization: "Bearer " + Deno.env.get("ANTHROPIC_AUTH_TOKEN"), "content-type": "application/json" }, ` +
    `body: JSON.stringify({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }) }); ` +
    `Deno.writeTextFileSync(${JSON.stringify(answer)}, await r.text()); Deno.exit(r.status === 200 ? 0 : 9);`;
  const run = await person.cli(["run", "--", Deno.execPath(), "eval", script]);
  assert.equal(run.code, 0, await Deno.readTextFile(answer).catch(() => run.err));
  assert.equal(JSON.parse(await Deno.readTextFile(answer)).content[0].text, "Hi from the gateway");
  assert.equal(gw.exchanges.at(-1)?.token_id, saved.token_id);

  const everything = [login.out, login.err, run.err, JSON.stringify(gw.logs), JSON.stringify(trail)].join("\n");
  assert.ok(!everything.includes(provider.clientSecret), "the client secret is never printed or logged");

  const logout = await person.cli(["logout"]);
  assert.equal(logout.code, 0, logout.err);
  const after = await gw.post("/v1/messages", { model: "claude-test", max_tokens: 8, messages: [] }, {
    "x-api-key": saved.token,
  });
  assert.equal(after.status, 401);
  await after.body?.cancel();
  await assert.rejects(Deno.stat(person.credentials), Deno.errors.NotFound);
});

Deno.test("a person no rule admits is refused: access_denied, the CLI exits 1 saying so, and nothing is saved", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ eve: { email: "eve@elsewhere.org" } });
  const setup = await deviceSetup(provider, upstream.url);
  await using gw = setup.gw;
  await using person = await personSetup();
  const login = await person.cli(
    ["login", "--gateway", gw.url],
    confirmAs(provider, "eve", setup.confirmed),
    setup.seams,
  );
  assert.equal(login.code, 1);
  assert.match(
    login.err,
    /Cannot sign in to http:\/\/127\.0\.0\.1:\d+: access denied: eve@elsewhere\.org matches no rule of this gateway's sign-in; ask an operator$/,
  );
  await assert.rejects(Deno.stat(person.credentials), Deno.errors.NotFound);
  assert.ok((await gw.store.listTokens()).every((token) => token.owner === undefined));
});

Deno.test("modelgate login --group takes a group the rules allow, and refuses one they do not", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
  for (const [group, code] of [["oa", 0], ["auto", 1]] as const) {
    const setup = await deviceSetup(provider, upstream.url);
    await using gw = setup.gw;
    await using person = await personSetup();
    const login = await person.cli(
      ["login", "--gateway", gw.url, "--group", group, "--name", "laptop"],
      confirmAs(provider, "ada", setup.confirmed),
      setup.seams,
    );
    assert.equal(login.code, code, login.err);
    if (code === 0) {
      const saved = JSON.parse(await Deno.readTextFile(person.credentials));
      assert.equal(saved.group, "oa");
      assert.equal((await gw.store.getToken(saved.token_id))?.name, "laptop");
    } else {
      assert.match(login.err, /access denied: ada@example\.com may make tokens in default, oa, not in "auto"$/);
    }
  }
});

Deno.test("signing in again replaces the login and revokes the token of the earlier one", async () => {
  await using upstream = fakeUpstream();
  await using provider = await startOidcProvider({ ada: { email: "ada@example.com" } });
  const setup = await deviceSetup(provider, upstream.url);
  await using gw = setup.gw;
  await using person = await personSetup();
  const tokens: string[] = [];
  for (let i = 0; i < 2; i++) {
    const confirmed = Promise.withResolvers<void>();
    const seams = {
      now: setup.seams.now,
      async sleep(ms: number) {
        await confirmed.promise;
        setup.advance(ms);
      },
    };
    // The second time as `deno task cli` runs it, which sets npm_config_user_agent as npm does, Deno's name first.
    if (i === 1) person.env.npm_config_user_agent = `deno/${Deno.version.deno} npm/? deno/${Deno.version.deno} linux`;
    const login = await person.cli(["login", "--gateway", gw.url], confirmAs(provider, "ada", confirmed), seams);
    assert.equal(login.code, 0, login.err);
    // Deno run through npx (a machine with only Node) is named so either way.
    const next = `${programNamed(i === 0 ? "modelgate" : "deno task cli")} run -- claude`;
    assert.ok(login.err.split("\n").includes(`Now run a tool with it: ${next}`), login.err);
    tokens.push(JSON.parse(await Deno.readTextFile(person.credentials)).token_id);
    if (i === 1) assert.match(login.err, new RegExp(`The earlier login's token ${tokens[0]} is revoked\\.$`));
  }
  assert.equal((await gw.store.getToken(tokens[0]))?.disabled, true);
  assert.equal((await gw.store.getToken(tokens[1]))?.disabled, false);
});

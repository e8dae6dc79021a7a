/**
 * @module Every table the CLI prints shows control characters escaped, and its JSON carries them as escapes: token
 * names and owners (token list, get, update), groups and their models, usage by owner and the request log (an owner's
 * email as an identity provider may send it), the audit trail (a user agent, the changed fields) and operator keys.
 * Each value below is one a person or a client can choose, or a record as KV may hold it; none may reach the terminal
 * as a control sequence.
 */
import assert from "node:assert/strict";
import { cliSetup } from "../_cli.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

/** Clear the screen, set the clipboard (OSC 52), an 8-bit CSI, right-to-left override, and a forged row. */
const HOSTILE = "\x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b31m\u202eevil\nforged-row";
/** The same as a header may carry it (no C0 but tab). */
const HOSTILE_HEADER = "\x9b2J\tagent\x85";
/** An email that passes as one: no space, one @. */
const HOSTILE_OWNER = "eve\x1b[8m\x9b\u202e@example.com";

/** Characters a terminal acts on; newlines are allowed only between a table's rows. */
// deno-lint-ignore no-control-regex -- what the test looks for
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** Checks a table: no control character, `rows` lines and the header, and each escape of a hostile value shown. */
function assertSafeTable(what: string, out: string, rows: number, shown: string[]): void {
  assert.ok(!CONTROL.test(out), `${what}: a control character reaches the terminal: ${JSON.stringify(out)}`);
  assert.equal(out.trimEnd().split("\n").length, rows + 1, `${what}: one line per row, none forged`);
  for (const text of shown) assert.ok(out.includes(text), `${what}: shows ${text} in ${out}`);
}

Deno.test("each CLI table escapes control characters, and --json writes them as escapes", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using setup = await cliSetup(upstream.url);
  const kv = await Deno.openKv(setup.kvPath);
  try {
    await using gw = await startGateway(upstream.url, { kv, admin: true });
    // A token named by whoever made it (a member chooses their own), through the admin API with a hostile user agent.
    const made = await gw.admin(
      "POST",
      "/admin/tokens",
      { group: "default", name: HOSTILE, owner: "eve@example.com" },
      {
        "user-agent": `curl ${HOSTILE_HEADER}`,
      },
    );
    assert.equal(made.status, 201);
    const { token } = await made.json();
    // The admin API takes an owner only as one email address; one already in KV (written before, or by hand) may hold
    // anything, and is shown escaped all the same.
    const refused = await gw.admin("POST", "/admin/tokens", { group: "default", owner: HOSTILE_OWNER });
    assert.equal((await refused.json()).error.param, "owner");
    const { secret } = await gw.store.createToken({ group: "default", name: HOSTILE, owner: HOSTILE_OWNER });
    const used = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(used.status, 200);
    await used.body?.cancel();
    await gw.flush();
    await gw.store.putGroup({ name: "ops\x1b[8m", listing: "anthropic", models: ["claude-test\u202e"] });
    await kv.atomic()
      .set(["operator_key", "opk_0"], "h0")
      .set(["operator_key_hash", "h0"], {
        id: "opk_0",
        name: `ann\x1b]52;c;cHduZWQ=\x07`,
        role: "viewer",
        created_at: "2030-01-01T00:00:00.000Z",
        expires_at: "2099-01-01T00:00:00.000Z",
        created_by: "cli",
        revoked: false,
      }).commit();

    const tokens = (await setup.cli("token list")).out;
    assertSafeTable("token list", tokens, (await gw.store.listTokens()).length, [
      "\\x1b[2J",
      "\\x1b]52;c;cHduZWQ=\\x07",
      "\\x9b31m",
      "\\u202e",
      "\\nforged-row",
    ]);
    assertSafeTable("token get", (await setup.cli(`token get ${token.id}`)).out, 1, ["\\x1b[2J"]);
    assertSafeTable("token update", (await setup.cli(`token update ${token.id} --tokens-per-day 9`)).out, 1, [
      "\\u202e",
    ]);
    const groups = (await setup.cli("group list")).out;
    assertSafeTable("group list", groups, (await gw.store.listGroups()).length, ["ops\\x1b[8m", "claude-test\\u202e"]);
    const owners = (await setup.cli("usage --by owner --since 1d")).out;
    assertSafeTable("usage", owners.slice(owners.indexOf("\n") + 1), 1, ["eve\\x1b[8m\\x9b\\u202e@example.com"]);
    assertSafeTable("usage log", (await setup.cli("usage log")).out, 1, ["eve\\x1b[8m\\x9b\\u202e@example.com"]);
    const audit = (await setup.cli("audit")).out;
    assertSafeTable("audit", audit, 2, ["curl \\x9b2J\\tagent\\x85", "\\u001b[2J", "\\u202e"]);
    assertSafeTable("operator-key list", (await setup.cli("operator-key list")).out, 1, [
      "ann\\x1b]52;c;cHduZWQ=\\x07",
    ]);

    // JSON keeps the values, every control character written as an escape.
    for (const line of ["token list --json", "audit --json", "usage log --json", "group list --json"]) {
      const out = (await setup.cli(line)).out;
      assert.ok(!CONTROL.test(out.replaceAll("\n", "")), `${line}: ${JSON.stringify(out)}`);
    }
    const listed = JSON.parse((await setup.cli("token list --json")).out);
    assert.ok(listed.some((t: { name: string }) => t.name === HOSTILE), "the name reads back as it was");
  } finally {
    kv.close();
  }
});

Deno.test("token list --json prints an array however many tokens it lists; token get --json the one token", async () => {
  await using upstream = fakeUpstream();
  await using setup = await cliSetup(upstream.url, {});
  const none = JSON.parse((await setup.cli("token list --group nobody-here --json")).out);
  assert.deepEqual(none, []);
  const created = JSON.parse((await setup.cli("token create --group default --name only --json")).out).token;
  const one = JSON.parse((await setup.cli("token list --json")).out);
  assert.ok(Array.isArray(one));
  assert.deepEqual(one.map((t: { id: string }) => t.id), [created.id]);
  await setup.cli("token create --group default --name second");
  assert.equal(JSON.parse((await setup.cli("token list --json")).out).length, 2);
  const got = JSON.parse((await setup.cli(`token get ${created.id} --json`)).out);
  assert.equal(got.id, created.id, "get answers the token itself, not a list");
});

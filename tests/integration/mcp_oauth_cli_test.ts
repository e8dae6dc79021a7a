/**
 * @module The CLI's `mcp grants list` and `mcp grants revoke` on the gateway's KV file: a grant an MCP client holds is
 * listed with its client, the token it acts as and its group (never a secret), and revoked, recorded as "cli".
 */
import assert from "node:assert/strict";
import { startGrant } from "../../src/access/oauth_grants.ts";
import { createStore, hashToken } from "../../src/access/store.ts";
import { cliSetup } from "../_cli.ts";

Deno.test("mcp grants list shows an MCP client's grant and mcp grants revoke ends it", async () => {
  await using setup = await cliSetup("http://127.0.0.1:9");
  assert.equal((await setup.cli("group list")).code, 0, "the KV file exists");
  const store = createStore(await Deno.openKv(setup.kvPath));
  let secret = "";
  try {
    const made = await store.createToken({ group: "default", name: "laptop", owner: "ada@example.com" });
    secret = made.secret;
    const grant = {
      id: "oag_00112233445566aa",
      client_id: "oac_0123456789abcdef0123456789abcdef",
      client_name: "Cursor",
      subject: {
        kind: "token" as const,
        token_id: made.record.id,
        token_hash: await hashToken(made.secret),
        owner: "ada@example.com",
      },
      resource: "https://gw.example.com/mcp",
      created_at: new Date().toISOString(),
      refreshed_at: null,
      expires_at: new Date().toISOString(),
      generation: 0,
    };
    await startGrant(store, grant, Date.now(), { accessMs: 3_600_000, refreshMs: 86_400_000 });
  } finally {
    store.close();
  }
  const listed = await setup.cli("mcp grants list");
  assert.equal(listed.code, 0, listed.err);
  assert.match(listed.out, /oag_00112233445566aa\s+Cursor\s+ada@example\.com\s+default/);
  const json = JSON.parse((await setup.cli("mcp grants list --json")).out);
  assert.equal(json[0].token.startsWith("tok_"), true);
  assert.ok(!JSON.stringify(json).includes(await hashToken(secret)), "no hash of the token");
  const revoked = await setup.cli("mcp grants revoke oag_00112233445566aa");
  assert.equal(revoked.code, 0, revoked.err);
  assert.match(revoked.err, /Revoked OAuth grant oag_00112233445566aa of ada@example\.com for "Cursor"/);
  assert.deepEqual(JSON.parse((await setup.cli("mcp grants list --json")).out), []);
  await assert.rejects(
    setup.cli("mcp grants revoke oag_00112233445566aa"),
    /OAuth grant "oag_00112233445566aa" does not/,
  );
  const audit = JSON.parse((await setup.cli("audit --action oauth_grant.revoke --json")).out);
  assert.equal(audit.data?.[0]?.actor ?? audit[0]?.actor, "cli");
  assert.equal((await setup.cli("mcp grants")).code, 2, "help for a command without its action");
});

/**
 * @module POST /auth/logout over real HTTP: a person's token revokes itself (the next call is 401) and the audit
 * trail names the person; a token an operator handed out (no owner) is refused 403 and keeps working.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

async function logout(url: string, secret?: string): Promise<Response> {
  return await fetch(`${url}/auth/logout`, {
    method: "POST",
    headers: { ...secret ? { authorization: `Bearer ${secret}` } : {}, "user-agent": "modelgate-cli/test" },
  });
}

Deno.test("POST /auth/logout revokes the caller's own token, the next call is 401, the trail names its owner", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const { secret, record } = await gw.store.createToken({ group: "default", owner: "ada@example.com" });
  const before = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(before.status, 200);
  await before.body?.cancel();

  const res = await logout(gw.url, secret);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { revoked: record.id });

  const after = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(after.status, 401);
  await after.body?.cancel();
  const trail = await (await gw.admin("GET", "/admin/audit")).json();
  const row = trail.data[0];
  assert.deepEqual(
    [row.actor, row.action, row.target, row.via, row.user_agent],
    ["ada@example.com", "token.revoke", record.id, "api", "modelgate-cli/test"],
  );
  assert.equal(row.after.disabled, true);
  assert.ok(!JSON.stringify(trail).includes(secret), "the trail holds no secret");
});

Deno.test("POST /auth/logout with a token that has no owner is 403 in OpenAI's shape and the token keeps working", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const res = await logout(gw.url, gw.tokens.default);
  assert.equal(res.status, 403);
  const body = await res.json();
  assert.equal(body.error.type, "permission_error");
  assert.match(body.error.message, /belongs to no person \(it has no owner\)/);
  const still = await gw.post("/v1/messages", messagesBody());
  assert.equal(still.status, 200);
  await still.body?.cancel();
});

Deno.test("POST /auth/logout without a token, or with an unknown one, is 401", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url);
  for (const secret of [undefined, "sk-not-a-token-of-this-gateway"]) {
    const res = await logout(gw.url, secret);
    assert.equal(res.status, 401);
    assert.match((await res.json()).error.message, /API key/);
  }
});

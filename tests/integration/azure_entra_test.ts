/**
 * An `azure-openai` upstream signed in with Microsoft Entra ID client credentials: the token fetched once for many
 * requests with the right form, sent as a bearer (never a key), refreshed before it expires (the clock is moved, never
 * waited for), fetched anew after a 401; a token endpoint that refuses or cannot be reached is a 502 naming the
 * upstream and nothing secret; the client secret and the token redacted when the resource echoes them, and never
 * logged.
 */
import assert from "node:assert/strict";
import { ENTRA } from "../_fake_azure.ts";
import { jsonReply } from "../_fake_upstream.ts";
import { azureRig, azureSecrets } from "../_azure_upstream.ts";
import { readText } from "../_helpers.ts";
import { FAILURE_HOLD_MS } from "../../src/providers/token_cache.ts";

const BODY = { model: "codex-entra", input: "Hi", store: false };

/** The bearer token the resource was last sent. */
function lastBearer(rig: { upstream: { requests: { headers: Headers }[] } }): string | null {
  return rig.upstream.requests.at(-1)!.headers.get("authorization");
}

Deno.test("Azure, Entra ID: one token for many requests, asked for with the client-credentials form", async () => {
  await using rig = await azureRig();
  const answers = await Promise.all(Array.from({ length: 5 }, () => rig.post("/v1/responses", BODY)));
  for (const res of answers) assert.equal(res.status, 200, await res.text());
  for (let i = 0; i < 3; i++) {
    const res = await rig.post("/v1/responses", { ...BODY, stream: true });
    assert.equal(res.status, 200);
    await readText(res);
  }
  assert.equal(rig.entra.grants.length, 1, "requests at the same time and later share one token");
  assert.deepEqual(Object.fromEntries(rig.entra.grants[0]), {
    grant_type: "client_credentials",
    client_id: ENTRA.clientId,
    client_secret: ENTRA.clientSecret,
    scope: "https://cognitiveservices.azure.com/.default",
  });
  const [token] = rig.entra.issued.keys();
  const calls = rig.upstream.requests.filter((r) => r.path === "/az-entra/openai/v1/responses");
  assert.equal(calls.length, 8);
  for (const call of calls) {
    assert.equal(call.headers.get("authorization"), `Bearer ${token}`);
    assert.equal(call.headers.get("api-key"), null);
  }
  assert.equal(rig.resources["az-entra"].unauthorized, 0);
});

Deno.test("Azure, Entra ID: the token is refreshed a few minutes before it expires, not before", async () => {
  await using rig = await azureRig();
  const first = await rig.post("/v1/responses", BODY);
  assert.equal(first.status, 200);
  await first.body?.cancel();
  const [token1] = rig.entra.issued.keys();
  rig.clock.now += 54 * 60_000; // six minutes before the hour's token expires: still held
  const held = await rig.post("/v1/responses", BODY);
  assert.equal(held.status, 200);
  await held.body?.cancel();
  assert.equal(rig.entra.grants.length, 1);
  assert.equal(lastBearer(rig), `Bearer ${token1}`);
  rig.clock.now += 2 * 60_000; // four minutes before: a new one, while the old one would still work
  const refreshed = await rig.post("/v1/responses", BODY);
  assert.equal(refreshed.status, 200);
  await refreshed.body?.cancel();
  assert.equal(rig.entra.grants.length, 2);
  const token2 = [...rig.entra.issued.keys()][1];
  assert.notEqual(token2, token1);
  assert.equal(lastBearer(rig), `Bearer ${token2}`);
});

Deno.test("Azure, Entra ID: a token the resource refuses (revoked) is replaced once and the request sent again", async () => {
  await using rig = await azureRig();
  const first = await rig.post("/v1/responses", BODY);
  await first.body?.cancel();
  rig.entra.revoke([...rig.entra.issued.keys()][0]);
  const res = await rig.post("/v1/responses", BODY);
  assert.equal(res.status, 200, await res.text());
  assert.equal(rig.entra.grants.length, 2);
  assert.equal(rig.resources["az-entra"].unauthorized, 1);
  assert.ok(rig.gw.logs.some((line) => line.event === "token_refused" && line.upstream === "az-entra"));
});

Deno.test("Azure, Entra ID: a token endpoint that refuses the grant is a 502 naming the upstream and the code, nothing secret", async () => {
  await using rig = await azureRig();
  rig.entra.failure = {
    status: 401,
    error: "invalid_client",
    code: 7000215,
    description: `Invalid client secret provided for app 'payments-prod' of tenant admin@contoso.example. ` +
      `Ensure the secret being sent is ${ENTRA.clientSecret}`,
  };
  for (const stream of [false, true]) {
    // A failed grant stands for a few seconds; each request here asks the endpoint anew.
    rig.clock.now += FAILURE_HOLD_MS;
    const res = await rig.post("/v1/responses", { ...BODY, stream });
    const text = await readText(res);
    assert.equal(res.status, 502, text);
    // Nothing was streamed yet: a stream's refusal is a JSON error too. Only the short codes: the description names the app, the tenant's admin and Entra's trace ids.
    assert.equal(
      JSON.parse(text).error.message,
      'Upstream "az-entra" could not get an access token: The token endpoint answered 401 (invalid_client, AADSTS7000215)',
    );
    for (const secret of azureSecrets(rig)) assert.ok(!text.includes(secret), "a secret reached the client");
    assert.ok(
      !text.includes(ENTRA.tenant) && !text.includes(rig.upstream.url),
      "the token endpoint's address is not told",
    );
  }
  assert.equal(rig.resources["az-entra"].unauthorized, 0, "no request went to the resource without a token");
  const logs = JSON.stringify(rig.gw.logs);
  for (const secret of azureSecrets(rig)) assert.ok(!logs.includes(secret), "a secret reached the log");
});

Deno.test("Azure, Entra ID: a token endpoint that cannot be reached is a 502 that does not name its address", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closed = `127.0.0.1:${listener.addr.port}`;
  listener.close();
  await using rig = await azureRig({ authority: `http://${closed}` });
  const res = await rig.post("/v1/responses", BODY);
  const text = await readText(res);
  assert.equal(res.status, 502, text);
  assert.match(text, /could not get an access token: The token endpoint could not be reached/);
  assert.ok(!text.includes(closed) && !text.includes(ENTRA.tenant), "the token endpoint's address is not told");
});

Deno.test("Azure, Entra ID: the client secret and the token are redacted when the resource echoes them, and never logged", async () => {
  await using rig = await azureRig();
  rig.upstream.routes.set("POST /az-entra/openai/v1/responses", (seen) =>
    jsonReply({
      error: {
        code: "400",
        message: `bad ${seen.headers.get("authorization")} for a client whose secret is ${ENTRA.clientSecret}`,
      },
    }, 400));
  const res = await rig.post("/v1/responses", BODY);
  const text = await readText(res);
  assert.equal(res.status, 400);
  assert.equal(rig.entra.grants.length, 1);
  for (const secret of azureSecrets(rig)) assert.ok(!text.includes(secret), `a secret reached the client: ${text}`);
  assert.match(text, /bad Bearer \[redacted\] for a client whose secret is \[redacted\]/);
  await rig.gw.flush();
  const logs = JSON.stringify(rig.gw.logs);
  for (const secret of azureSecrets(rig)) assert.ok(!logs.includes(secret), "a secret reached the log");
});

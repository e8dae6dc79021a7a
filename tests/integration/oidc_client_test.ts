/**
 * @module The OpenID client against a real provider on 127.0.0.1: discovery (kept once read), the code flow with PKCE,
 * every way an id_token or a code is refused (tampered, unsigned, foreign key, wrong audience, expired, nonce,
 * replayed, issued in the future, another authorized party, an email not verified as the boolean true), the start's
 * checks of auth.oidc, and the test provider's device flow.
 */
import assert from "node:assert/strict";
import { generateKeyPair, SignJWT } from "jose";
import { codeChallenge, oidcClient, randomToken } from "../../src/access/oidc.ts";
import { groupsScopeWarning, oidcFrom } from "../../src/access/operator.ts";
import type { OidcConfig } from "../../src/core/config.ts";
import { parseConfig } from "../../src/core/config_load.ts";
import { GatewayError } from "../../src/core/errors.ts";
import { startOidcProvider, type TestProvider } from "../_oidc_provider.ts";
import { deadlineFetch } from "../_reads.ts";

const fetchWithDeadline = deadlineFetch();

const REDIRECT = "http://127.0.0.1:9/ui/auth/callback";

function configOf(provider: TestProvider, extra: Partial<OidcConfig> = {}): OidcConfig {
  return {
    issuer: provider.issuer,
    client_id: provider.clientId,
    client_secret_env: "OIDC_SECRET",
    scopes: ["openid", "email", "profile", "groups"],
    roles: [{ domain: "example.com", role: "member", token_groups: [] }],
    require_email_verified: true,
    ...extra,
  };
}

/** Goes through the provider's login as `login`; answers the client, the code it got and how it asked for it. */
async function authorize(provider: TestProvider, login: string, fetches: string[] = []) {
  const client = oidcClient(configOf(provider), {
    clientSecret: provider.clientSecret,
    now: () => new Date(),
    fetch: (input, init) => {
      fetches.push(String(input));
      return fetchWithDeadline(input, init);
    },
  });
  const state = randomToken();
  const nonce = randomToken();
  const codeVerifier = randomToken();
  const url = await client.authorizationUrl({ redirectUri: REDIRECT, state, nonce, codeVerifier });
  const { redirect } = await provider.complete(url.href, login);
  assert.ok(redirect, "the provider sends the browser back");
  assert.equal(redirect.searchParams.get("state"), state);
  return { client, code: redirect.searchParams.get("code")!, codeVerifier, nonce };
}

/** Signs in as `login` and answers the code, the id_token, and the nonce it was asked for. */
async function signIn(provider: TestProvider, login: string, fetches: string[] = []) {
  const flow = await authorize(provider, login, fetches);
  const idToken = await flow.client.exchangeCode({
    code: flow.code,
    redirectUri: REDIRECT,
    codeVerifier: flow.codeVerifier,
  });
  return { ...flow, idToken };
}

async function refusal(promise: Promise<unknown>): Promise<{ status: number; message: string }> {
  const err = await promise.then(() => undefined, (e) => e);
  assert.ok(err instanceof GatewayError, `refused with a GatewayError, got ${err}`);
  return { status: err.status, message: err.message };
}

const ACCOUNTS = { alice: { email: "Alice@Example.com", name: "Alice", groups: ["platform-admins", "staff"] } };

Deno.test("the code flow with PKCE gives the person the id_token names; the metadata is read once", async () => {
  await using provider = await startOidcProvider(ACCOUNTS);
  const fetches: string[] = [];
  const { client, idToken, nonce } = await signIn(provider, "alice", fetches);
  const person = await client.verifyIdToken(idToken, { nonce });
  assert.deepEqual(person, {
    email: "alice@example.com",
    name: "Alice",
    groups: ["platform-admins", "staff"],
    groupsClaim: true,
  });
  await client.verifyIdToken(idToken, { nonce });
  assert.equal(fetches.filter((url) => url.endsWith("/.well-known/openid-configuration")).length, 1);
});

Deno.test("the authorization request carries the S256 challenge of its verifier (RFC 7636)", async () => {
  await using provider = await startOidcProvider(ACCOUNTS);
  const client = oidcClient(configOf(provider), { clientSecret: provider.clientSecret, now: () => new Date() });
  const url = await client.authorizationUrl({
    redirectUri: REDIRECT,
    state: "s",
    nonce: "n",
    codeVerifier: randomToken(),
  });
  assert.equal(url.searchParams.get("code_challenge_method"), "S256");
  assert.match(url.searchParams.get("code_challenge")!, /^[A-Za-z0-9_-]{43}$/);
  // RFC 7636, appendix B.
  assert.equal(
    await codeChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
    "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
  );
});

Deno.test("a code is exchanged once: a replayed code, or one with the wrong verifier, is refused with a 401", async () => {
  await using provider = await startOidcProvider(ACCOUNTS);
  const { client, code, codeVerifier } = await signIn(provider, "alice");
  const replay = await refusal(client.exchangeCode({ code, redirectUri: REDIRECT, codeVerifier }));
  assert.equal(replay.status, 401);
  assert.match(replay.message, /invalid_grant/);
  const other = await authorize(provider, "alice");
  const wrongVerifier = await refusal(
    other.client.exchangeCode({ code: other.code, redirectUri: REDIRECT, codeVerifier: randomToken() }),
  );
  assert.equal(wrongVerifier.status, 401);
});

Deno.test("an id_token that is tampered with, unsigned, foreign, for another client, expired or for another nonce is refused", async () => {
  await using provider = await startOidcProvider(ACCOUNTS);
  const { client, idToken, nonce } = await signIn(provider, "alice");
  const [header, payload, signature] = idToken.split(".");
  const claims = JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(payload, { alphabet: "base64url" })));
  const encode = (value: unknown) =>
    new TextEncoder().encode(JSON.stringify(value)).toBase64({ alphabet: "base64url", omitPadding: true });
  const { privateKey } = await generateKeyPair("RS256");
  const foreign = await new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "test-key-1" }).sign(privateKey);
  const cases: [string, () => Promise<unknown>, RegExp][] = [
    [
      "a changed claim",
      () => client.verifyIdToken(`${header}.${encode({ ...claims, email: "eve@example.com" })}.${signature}`),
      /signature/,
    ],
    [
      "alg none",
      () => client.verifyIdToken(`${encode({ alg: "none" })}.${payload}.`, { nonce }),
      /algorithm|malformed/,
    ],
    ["a foreign key", () => client.verifyIdToken(foreign, { nonce }), /signature/],
    ["another nonce", () => client.verifyIdToken(idToken, { nonce: "another" }), /nonce/],
    ["garbage", () => client.verifyIdToken("not-a-jwt", { nonce }), /malformed/],
  ];
  const other = oidcClient(configOf(provider, { client_id: "someone-else" }), {
    clientSecret: "x",
    now: () => new Date(),
  });
  cases.push(["another audience", () => other.verifyIdToken(idToken, { nonce }), /claim aud/]);
  const later = oidcClient(configOf(provider), {
    clientSecret: "x",
    now: () => new Date(Date.now() + 2 * 86_400_000),
  });
  cases.push(["an expired one", () => later.verifyIdToken(idToken, { nonce }), /expired/]);
  for (const [name, attempt, want] of cases) {
    const { status, message } = await refusal(attempt());
    assert.equal(status, 401, name);
    assert.match(message, want, name);
    assert.ok(!message.includes(signature), `${name}: the message holds no part of the token`);
  }
});

Deno.test("metadata that names another issuer is refused (502), and an unverified email is refused", async () => {
  await using provider = await startOidcProvider({
    ...ACCOUNTS,
    mallory: { email: "mallory@example.com", email_verified: false },
  });
  const wrong = oidcClient(configOf(provider, { issuer: `${provider.issuer}/` }), {
    clientSecret: "x",
    now: () => new Date(),
  });
  assert.equal((await refusal(wrong.metadata())).status, 502);
  const { client, idToken, nonce } = await signIn(provider, "mallory");
  assert.match((await refusal(client.verifyIdToken(idToken, { nonce }))).message, /not verified/);
});

Deno.test("email_verified lets an email in only as the boolean true, or absent where the operator trusts the provider without it", async () => {
  await using provider = await startOidcProvider({});
  const verify = async (claims: Record<string, unknown>, required: boolean) => {
    const client = oidcClient(configOf(provider, { require_email_verified: required }), {
      clientSecret: "x",
      now: () => new Date(),
    });
    const outcome = await client.verifyIdToken(await provider.signIdToken(claims)).then(() => "taken", (err) => {
      assert.ok(err instanceof GatewayError && err.status === 401, String(err));
      return err.message.includes("not verified") ? "not verified" : err.message;
    });
    return outcome;
  };
  const cases: [unknown, "taken" | "not verified", "taken" | "not verified"][] = [
    // [the claim, with require_email_verified: true (the default), with false]
    [true, "taken", "taken"],
    [false, "not verified", "not verified"],
    ["false", "not verified", "not verified"],
    ["true", "not verified", "not verified"],
    [1, "not verified", "not verified"],
    [null, "not verified", "not verified"],
    [{}, "not verified", "not verified"],
    [undefined, "not verified", "taken"],
  ];
  for (const [claim, required, trusted] of cases) {
    const claims = claim === undefined ? {} : { email_verified: claim };
    assert.equal(await verify(claims, true), required, `${JSON.stringify(claim)}, required`);
    assert.equal(await verify(claims, false), trusted, `${JSON.stringify(claim)}, trusted without it`);
  }
  const config = configWithOidc("roles: [{ domain: example.com, role: member }]");
  assert.equal(config.auth.oidc?.require_email_verified, true, "required unless the config says not");
});

Deno.test("an id_token issued in the future beyond the clock tolerance, or for another authorized party, is refused", async () => {
  await using provider = await startOidcProvider({});
  const client = oidcClient(configOf(provider), { clientSecret: "x", now: () => new Date() });
  const now = Math.floor(Date.now() / 1000);
  const verified = { email_verified: true };
  const cases: [string, Record<string, unknown>, RegExp | "taken"][] = [
    ["iat an hour ahead", { iat: now + 3600 }, /claim iat/],
    ["iat two minutes ahead", { iat: now + 120 }, /claim iat/],
    ["iat within the tolerance", { iat: now + 30 }, "taken"],
    ["two audiences, no azp", { aud: [provider.clientId, "another-client"] }, /claim azp/],
    ["two audiences, azp another", { aud: [provider.clientId, "another-client"], azp: "another-client" }, /claim azp/],
    ["two audiences, azp this client", { aud: [provider.clientId, "another-client"], azp: provider.clientId }, "taken"],
    ["one audience, azp another", { azp: "another-client" }, /claim azp/],
    ["one audience, azp this client", { azp: provider.clientId }, "taken"],
  ];
  for (const [name, claims, want] of cases) {
    const attempt = client.verifyIdToken(await provider.signIdToken({ ...verified, ...claims }));
    if (want === "taken") await attempt;
    else {
      const { status, message } = await refusal(attempt);
      assert.equal(status, 401, name);
      assert.match(message, want, name);
    }
  }
});

/**
 * A config of one upstream and group whose auth.oidc has a provider at `issuer` (an example address unless given), its
 * client secret in the variable `secretEnv` (S unless given), and `rest`, the mapping's other keys.
 */
function configWithOidc(rest: string, { issuer = "https://id.example.test", secretEnv = "S" } = {}) {
  return parseConfig(
    `upstreams: [{ name: a, protocol: anthropic, base_url: "https://api.example.test", api_key_env: K, models: [m] }]
groups: [{ name: default, listing: anthropic, models: [m] }]
auth: { oidc: { issuer: "${issuer}", client_id: gw, client_secret_env: ${secretEnv}, ${rest} } }
`,
    "cfg.yaml",
  );
}

Deno.test("the gateway does not start with auth.oidc but no admin key, or with its client secret unset", () => {
  const config = configWithOidc("roles: [{ group: g, role: admin }]", { secretEnv: "OIDC_SECRET" });
  const options = (env: Record<string, string>) => ({ env: (name: string) => env[name], log: () => {}, now: Date.now });
  assert.throws(() => oidcFrom(config, options({ OIDC_SECRET: "s" }), undefined), /off without MODELGATE_ADMIN_KEY/);
  assert.throws(() => oidcFrom(config, options({}), "k".repeat(32)), /names OIDC_SECRET, which is not set/);
  assert.ok(oidcFrom(config, options({ OIDC_SECRET: "s" }), "k".repeat(32)));
});

Deno.test("groupsScopeWarning() warns when rules match on group and scopes lacks groups, and not otherwise", () => {
  const group = "roles: [{ group: admins, role: admin }, { domain: example.com, role: member }]";
  const cases: [string, string, boolean][] = [
    ["https://id.example.test", group, true],
    ["https://id.example.test", `scopes: [openid, email, groups], ${group}`, false],
    ["https://id.example.test", "roles: [{ domain: example.com, role: member }]", false],
    ["https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000/v2.0", group, false],
  ];
  for (const [issuer, rules, warned] of cases) {
    const warning = groupsScopeWarning(configWithOidc(rules, { issuer }).auth.oidc!);
    assert.equal(warning !== undefined, warned, `${issuer} ${rules}`);
  }
});

Deno.test("the test provider's device flow: a code confirmed as an account gives the device an id_token naming it", async () => {
  await using provider = await startOidcProvider(ACCOUNTS);
  const client = oidcClient(configOf(provider), { clientSecret: provider.clientSecret, now: () => new Date() });
  const meta = await client.metadata();
  assert.ok(meta.device_authorization_endpoint);
  const basic = { authorization: `Basic ${btoa(`${provider.clientId}:${provider.clientSecret}`)}` };
  const started = await fetchWithDeadline(meta.device_authorization_endpoint, {
    method: "POST",
    headers: basic,
    body: new URLSearchParams({ scope: "openid email groups" }),
  });
  const device = await started.json();
  assert.match(device.verification_uri_complete, /user_code=/);
  const pending = await fetchWithDeadline(meta.token_endpoint, {
    method: "POST",
    headers: basic,
    body: new URLSearchParams({
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: device.device_code,
    }),
  });
  assert.equal((await pending.json()).error, "authorization_pending");
  const { page } = await provider.complete(device.verification_uri_complete, "alice");
  assert.match(page ?? "", /Device signed in/);
  const done = await fetchWithDeadline(meta.token_endpoint, {
    method: "POST",
    headers: basic,
    body: new URLSearchParams({
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: device.device_code,
    }),
  });
  const answer = await done.json();
  assert.equal(done.status, 200, JSON.stringify(answer));
  const person = await client.verifyIdToken(answer.id_token);
  assert.deepEqual(person.groups, ["platform-admins", "staff"]);
  assert.equal(person.email, "alice@example.com");
});

/**
 * @module RS256 JWTs against RFC 7515's published example, service-account file checks, and the token cache
 * against a fake token endpoint that verifies each assertion.
 */
import assert from "node:assert/strict";
import { importRsaKey, parseServiceAccount, serviceAccountTokens, signJwt } from "../../src/providers/google_token.ts";
import { FAILURE_HOLD_MS } from "../../src/providers/token_cache.ts";
import { fakeVertex } from "../_fake_vertex.ts";

// RFC 7515 Appendix A.2: the RSA key (RFC 7517 A.2), the payload bytes and the signature it publishes.
const RFC_KEY = {
  kty: "RSA",
  n: "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNM" +
    "sD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xs" +
    "mtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ",
  e: "AQAB",
  d: "Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97IjlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-pW" +
    "J1O0BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2QvX" +
    "t4ehNYTCBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLhBOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuOopznQ",
  p: "4BzEEOtIpmVdVEZNCqS7baC4crd0pqnRH_5IB3jw3bcxGn6QLvnEtfdUdiYrqBdss1l58BQ3KhooKeQTa9AB0Hw_Py5PJdTJNPY8cQn7ouZ2KKDcm" +
    "nPGBY5t7yLc1QlQ5xHdwW1VhvKn-nXqhJTBgIPgtldC-KDV5z-y2XDwGUc",
  q: "uQPEfgmVtjL0Uyyx88GZFF1fOunH3-7cepKmtH4pxhtCoHqpWmT8YAmZxaewHgHAjLYsp1ZSe7zFYHj7C6ul7TjeLQeZD_YwD66t62wDmpe_HlB-" +
    "TnBA-njbglfIsRLtXlnDzQkv5dTltRJ11BKBBypeeF6689rjcJIDEz9RWdc",
  dp:
    "BwKfV3Akq5_MFZDFZCnW-wzl-CCo83WoZvnLQwCTeDv8uzluRSnm71I3QCLdhrqE2e9YkxvuxdBfpT_PI7Yz-FOKnu1R6HsJeDCjn12Sk3vmAktV" +
    "2zb34MCdy7cpdTh_YVr7tss2u6vneTwrA86rZtu5Mbr1C1XsmvkxHQAdYo0",
  dq:
    "h_96-mK1R_7glhsum81dZxjTnYynPbZpHziZjeeHcXYsXaaMwkOlODsWa7I9xXDoRwbKgB719rrmI2oKr6N3Do9U0ajaHF-NKJnwgjMd2w9cjz3_" +
    "-kyNlxAr2v4IKhGNpmM5iIgOS1VZnOZ68m6_pbLBSp3nssTdlqvd0tIiTHU",
  qi:
    "IYd7DHOhrWvxkwPQsRM2tOgrjbcrfvtQJipd-DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd_QJQ3ydy5cY7YIBi87w93IKLEdfnbJtoOP" +
    "LUW0ITrJReOgo1cq9SbsxYawBgfp_gh6A5603k2-ZQwVK0JKSHuLFkuQ3U",
};
const RFC_PAYLOAD = '{"iss":"joe",\r\n "exp":1300819380,\r\n "http://example.com/is_root":true}';
const RFC_JWS = "eyJhbGciOiJSUzI1NiJ9" +
  ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ" +
  ".cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dn" +
  "ZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-" +
  "eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw";

Deno.test("signJwt() signs RFC 7515's RS256 example exactly as the RFC publishes, from a PEM key", async () => {
  const jwk = await crypto.subtle.importKey("jwk", RFC_KEY, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, [
    "sign",
  ]);
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", jwk));
  const pem = `-----BEGIN PRIVATE KEY-----\n${
    der.toBase64().match(/.{1,64}/g)!.join("\n")
  }\n-----END PRIVATE KEY-----\n`;
  assert.equal(await signJwt({}, RFC_PAYLOAD, await importRsaKey(pem)), RFC_JWS);
});

Deno.test("importRsaKey() refuses text that is not a PEM key, without quoting it", async () => {
  await assert.rejects(() => importRsaKey("-----BEGIN PRIVATE KEY-----\nnot*base64\n"), (err: Error) => {
    assert.equal(err.message, "Cannot read the private key: it is not PEM");
    return true;
  });
});

const ACCOUNT = {
  client_email: "a@b.iam.gserviceaccount.com",
  private_key: "SECRET-PEM",
  token_uri: "https://x/token",
};
const BAD_FILES = [
  { name: "not JSON", text: "{", message: "Cannot read service-account file: it is not JSON" },
  {
    name: "another kind of credential",
    text: JSON.stringify({ ...ACCOUNT, type: "authorized_user" }),
    message: 'Cannot read service-account file: its type is "authorized_user", not "service_account"',
  },
  {
    name: "no private key",
    text: JSON.stringify({ ...ACCOUNT, private_key: undefined }),
    message: 'Cannot read service-account file: "private_key" is missing',
  },
  {
    name: "a token_uri that is not a URL",
    text: JSON.stringify({ ...ACCOUNT, token_uri: "nowhere" }),
    message: 'Cannot read service-account file: "token_uri" is not a URL',
  },
];
for (const bad of BAD_FILES) {
  Deno.test(`parseServiceAccount() names the problem of a file with ${bad.name}`, () => {
    assert.throws(() => parseServiceAccount(bad.text), (err: Error) => {
      assert.equal(err.message, bad.message);
      assert.ok(!err.message.includes("SECRET-PEM"));
      return true;
    });
  });
}

/** A token source on the fake's key file, with a clock the test moves. */
async function tokensFor(expiresIn: number) {
  const clock = { now: Date.UTC(2026, 0, 1) };
  const vertex = await fakeVertex({ expiresIn, now: () => clock.now });
  const account = parseServiceAccount(await Deno.readTextFile(vertex.credentialsFile));
  const tokens = serviceAccountTokens(account, { fetch, now: () => clock.now });
  return { clock, vertex, tokens };
}

Deno.test("serviceAccountTokens() exchanges a verified JWT once and reuses the token until shortly before expiry", async () => {
  const { clock, vertex, tokens } = await tokensFor(3600);
  await using _ = vertex;
  const [a, b] = await Promise.all([tokens.token(), tokens.token()]);
  assert.equal(a, "ya29.fake-token-1");
  assert.equal(b, a, "callers at the same time share one exchange");
  assert.equal(vertex.grants.length, 1);
  const { header, claims } = vertex.grants[0];
  assert.deepEqual(header, { alg: "RS256", typ: "JWT", kid: "fake-key-id-0001" });
  assert.equal(claims.aud, `${vertex.url}/token`);
  assert.equal(Number(claims.exp) - Number(claims.iat), 3600);

  clock.now += 54 * 60_000; // 6 minutes before expiry: still cached
  assert.equal(await tokens.token(), a);
  assert.equal(vertex.grants.length, 1);
  clock.now += 2 * 60_000; // 4 minutes before expiry: refreshed ahead of time
  assert.equal(await tokens.token(), "ya29.fake-token-2");
  assert.equal(vertex.grants.length, 2);
});

Deno.test("serviceAccountTokens() keeps a still-valid token when an early refresh fails, but not after expiry", async () => {
  const { clock, vertex, tokens } = await tokensFor(600);
  await using _ = vertex;
  const first = await tokens.token();
  clock.now += 8 * 60_000; // past the refresh point (half of a 10-minute life), before expiry
  vertex.tokenFailure = { status: 503, error: "backend_error" };
  assert.equal(await tokens.token(), first);
  clock.now += 3 * 60_000; // expired
  await assert.rejects(() => tokens.token(), { message: "The token endpoint answered 503 (backend_error)" });
  vertex.tokenFailure = undefined;
  clock.now += FAILURE_HOLD_MS; // a failed exchange stands that long
  assert.equal(await tokens.token(), "ya29.fake-token-2");
});

Deno.test("serviceAccountTokens() fetches anew after invalidate(), and ignores invalidating a replaced token", async () => {
  const { vertex, tokens } = await tokensFor(3600);
  await using _ = vertex;
  const first = await tokens.token();
  tokens.invalidate(first);
  const second = await tokens.token();
  assert.notEqual(second, first);
  tokens.invalidate(first); // a late 401 for the old token must not throw the new one away
  assert.equal(await tokens.token(), second);
  assert.equal(vertex.grants.length, 2);
});

Deno.test("serviceAccountTokens() reports a refused grant by its OAuth code only", async () => {
  const { vertex, tokens } = await tokensFor(3600);
  await using _ = vertex;
  vertex.tokenFailure = { status: 400, error: "invalid_grant" };
  await assert.rejects(() => tokens.token(), (err: Error) => {
    assert.equal(err.message, "The token endpoint answered 400 (invalid_grant)");
    return true;
  });
});

Deno.test("serviceAccountTokens() lets a caller give up waiting without failing the shared exchange", async () => {
  const { vertex, tokens } = await tokensFor(3600);
  await using _ = vertex;
  const controller = new AbortController();
  const waiting = tokens.token(controller.signal);
  const other = tokens.token();
  controller.abort(new Error("client left"));
  await assert.rejects(() => waiting, { message: "client left" });
  assert.equal(await other, "ya29.fake-token-1");
});

Deno.test("serviceAccountTokens() reports an unreachable token endpoint without its address", async () => {
  const { vertex } = await tokensFor(3600);
  await using _ = vertex;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closed = `http://127.0.0.1:${listener.addr.port}/private-token-path`;
  listener.close();
  const account = { ...parseServiceAccount(await Deno.readTextFile(vertex.credentialsFile)), token_uri: closed };
  const tokens = serviceAccountTokens(account, { fetch, now: Date.now });
  await assert.rejects(() => tokens.token(), (err: Error) => {
    assert.equal(err.message, "The token endpoint could not be reached");
    return true;
  });
});

/** @module The pure rules of /mcp's OAuth: redirect URIs, their matching, PKCE S256, resources, client id URLs. */
import assert from "node:assert/strict";
import {
  clientIdUrlProblem,
  grantIdOf,
  newAccessToken,
  oauthBase,
  redirectMatches,
  redirectProblem,
  s256,
  sameResource,
  verifierMatches,
} from "../../src/access/oauth_rules.ts";

Deno.test("redirect URIs: https anywhere, http to loopback only, an app's own scheme, nothing a browser runs", () => {
  const cases: [string, RegExp | undefined][] = [
    ["https://claude.ai/api/mcp/auth_callback", undefined],
    ["https://chatgpt.com/connector_platform_oauth_redirect", undefined],
    ["http://127.0.0.1/", undefined],
    ["http://127.0.0.1:33418/", undefined],
    ["http://localhost:8787/callback", undefined],
    ["http://[::1]:9000/cb", undefined],
    ["cursor://anysphere.cursor-mcp/oauth/callback", undefined],
    ["com.example.app:/oauth", undefined],
    ["http://example.com/cb", /loopback/],
    ["http://192.168.1.5/cb", /loopback/],
    ["http://127.0.0.1.evil.example/cb", /loopback/],
    ["https://ok.example/cb#frag", /fragment/],
    ["https://user:pass@ok.example/cb", /user name/],
    ["javascript:alert(1)", /javascript/],
    ["data:text/html,hi", /data/],
    ["file:///etc/passwd", /file/],
    ["not a url", /not a URL/],
    [`https://ok.example/${"a".repeat(2001)}`, /longer/],
  ];
  for (const [uri, problem] of cases) {
    const found = redirectProblem(uri);
    if (problem) assert.match(found ?? "", problem, uri);
    else assert.equal(found, undefined, uri);
  }
});

Deno.test("a redirect matches its registration exactly, but for the port of a loopback one", () => {
  const cases: [string, string, boolean][] = [
    ["https://claude.ai/api/mcp/auth_callback", "https://claude.ai/api/mcp/auth_callback", true],
    ["https://claude.ai/api/mcp/auth_callback", "https://claude.ai/api/mcp/auth_callback/", false],
    ["https://claude.ai/cb", "https://claude.ai:8443/cb", false],
    ["http://127.0.0.1/callback", "http://127.0.0.1:51234/callback", true],
    ["http://127.0.0.1:33418/", "http://127.0.0.1:40000/", true],
    ["http://localhost/callback", "http://127.0.0.1:5000/callback", false],
    ["http://127.0.0.1/callback", "http://127.0.0.1:5000/other", false],
    ["http://127.0.0.1/callback", "http://127.0.0.1:5000/callback?x=1", false],
    ["cursor://anysphere.cursor-mcp/oauth/callback", "cursor://anysphere.cursor-mcp/oauth/callback", true],
    ["cursor://anysphere.cursor-mcp/oauth/callback", "cursor://anysphere.cursor-mcp:1/oauth/callback", false],
  ];
  for (const [registered, given, expected] of cases) {
    assert.equal(redirectMatches(registered, given), expected, `${registered} ~ ${given}`);
  }
});

Deno.test("PKCE S256: the RFC 7636 example, and verifiers of the wrong shape", async () => {
  const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  assert.equal(await s256(verifier), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  assert.equal(await verifierMatches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"), true);
  assert.equal(await verifierMatches(null, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"), false);
  assert.equal(await verifierMatches("short", await s256("short")), false, "under 43 characters");
  assert.equal(await verifierMatches("a".repeat(129), await s256("a".repeat(129))), false, "over 128");
  assert.equal(await verifierMatches(`${"a".repeat(43)}!`, await s256(`${"a".repeat(43)}!`)), false);
});

Deno.test("a resource is this /mcp and nothing else; the base is https, or http on loopback", () => {
  assert.equal(sameResource("https://GW.example.com:443/mcp", "https://gw.example.com/mcp"), true);
  for (const other of ["https://gw.example.com/mcp/", "https://gw.example.com/mcp?x", "https://gw.example.com/v1"]) {
    assert.equal(sameResource(other, "https://gw.example.com/mcp"), false, other);
  }
  assert.equal(sameResource("https://gw.example.com/mcp#f", "https://gw.example.com/mcp"), false);
  assert.equal(
    oauthBase({ https: true, authority: "gw.example.com", hostname: "gw.example.com" }),
    "https://gw.example.com",
  );
  assert.equal(
    oauthBase({ https: false, authority: "127.0.0.1:8787", hostname: "127.0.0.1" }),
    "http://127.0.0.1:8787",
  );
  assert.equal(oauthBase({ https: false, authority: "gw.example.com", hostname: "gw.example.com" }), undefined);
});

Deno.test("a client id URL is https, with a path, on a public host", () => {
  const cases: [string, RegExp | undefined][] = [
    ["https://claude.ai/oauth/claude-code-client-metadata", undefined],
    ["http://claude.ai/oauth/x", /https/],
    ["https://claude.ai/", /path/],
    ["https://claude.ai/x#y", /fragment/],
    ["https://127.0.0.1/x", /public host/],
    ["https://[::1]/x", /public host/],
    ["https://10.0.0.1/x", /public host/],
    ["https://172.16.5.4/x", /public host/],
    ["https://192.168.0.1/x", /public host/],
    ["https://169.254.169.254/latest", /public host/],
    ["https://metadata/x", /public host/],
    ["https://printer.local/x", /public host/],
    ["https://[fd00::1]/x", /public host/],
  ];
  for (const [id, problem] of cases) {
    const found = clientIdUrlProblem(id);
    if (problem) assert.match(found ?? "", problem, id);
    else assert.equal(found, undefined, id);
  }
});

Deno.test("an access token names its grant; nothing else reads as one", () => {
  const token = newAccessToken("oag_0123456789abcdef");
  assert.equal(grantIdOf(token), "oag_0123456789abcdef");
  for (const other of ["sk-abc", "mga_oag_0123456789abcdef", "mga_oag_xyz.aaa", `mgr_${"a".repeat(43)}`]) {
    assert.equal(grantIdOf(other), undefined, other);
  }
});

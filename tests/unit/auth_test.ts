/**
 * @module Unit tests for reading a client's credential from its headers, and for authenticating a request by its
 * protocol's rules (Gemini's key header and parameter, the parameter refused while URLs are traced).
 */
import assert from "node:assert/strict";
import { authenticateRequest, type Credentials, readCredential } from "../../src/access/auth.ts";
import { createAuthGuard } from "../../src/access/guard.ts";
import type { Group, TokenRecord } from "../../src/core/principal.ts";

const CASES: { name: string; headers: Record<string, string>; want: string | undefined }[] = [
  { name: "reads x-api-key", headers: { "x-api-key": "sk-a" }, want: "sk-a" },
  { name: "reads a Bearer token", headers: { authorization: "Bearer sk-b" }, want: "sk-b" },
  { name: "accepts any case of Bearer", headers: { authorization: "bearer sk-b" }, want: "sk-b" },
  { name: "trims x-api-key", headers: { "x-api-key": "  sk-a " }, want: "sk-a" },
  {
    name: "prefers x-api-key over Bearer",
    headers: { "x-api-key": "sk-a", authorization: "Bearer sk-b" },
    want: "sk-a",
  },
  {
    name: "falls back to Bearer when x-api-key is empty",
    headers: { "x-api-key": "", authorization: "Bearer sk-b" },
    want: "sk-b",
  },
  { name: "ignores Basic auth", headers: { authorization: "Basic c2stYQ==" }, want: undefined },
  { name: "ignores a Bearer with two words", headers: { authorization: "Bearer sk-a sk-b" }, want: undefined },
  { name: "gives nothing without headers", headers: {}, want: undefined },
];
for (const c of CASES) {
  Deno.test(`readCredential() ${c.name}`, () => assert.equal(readCredential(new Headers(c.headers)), c.want));
}

/** A token "sk-good" in a group, found without KV. */
const credentials: Credentials = {
  byHash: () => Promise.resolve(null),
  bySecret: (secret) =>
    Promise.resolve(
      secret === "sk-good"
        ? { token: { id: "t1", group: "g" } as TokenRecord, group: { name: "g", models: [] } as unknown as Group }
        : null,
    ),
};

const REQUEST_CASES: {
  name: string;
  protocol: "anthropic" | "gemini";
  url?: string;
  headers?: Record<string, string>;
  traced?: boolean;
  want: string | RegExp;
}[] = [
  {
    name: "takes a Gemini client's x-goog-api-key",
    protocol: "gemini",
    headers: { "x-goog-api-key": "sk-good" },
    want: "t1",
  },
  { name: "takes a Gemini client's key parameter", protocol: "gemini", url: "/v1beta/models?key=sk-good", want: "t1" },
  {
    name: "prefers x-goog-api-key to x-api-key for a Gemini client",
    protocol: "gemini",
    headers: { "x-goog-api-key": "sk-good", "x-api-key": "sk-bad" },
    want: "t1",
  },
  {
    name: "refuses the key parameter while URLs are traced",
    protocol: "gemini",
    url: "/v1beta/models?key=sk-good",
    traced: true,
    want: /key query parameter is refused here because request URLs are traced/,
  },
  {
    name: "takes the header while URLs are traced",
    protocol: "gemini",
    headers: { "x-goog-api-key": "sk-good" },
    traced: true,
    want: "t1",
  },
  { name: "names Gemini's ways for a missing key", protocol: "gemini", want: /send it as x-goog-api-key or the key/ },
  {
    name: "does not read x-goog-api-key for another protocol",
    protocol: "anthropic",
    headers: { "x-goog-api-key": "sk-good" },
    want: /Missing API key: send it as x-api-key or Authorization: Bearer/,
  },
  {
    name: "reads x-api-key for another protocol",
    protocol: "anthropic",
    headers: { "x-api-key": "sk-good" },
    want: "t1",
  },
  {
    name: "refuses an unknown token",
    protocol: "anthropic",
    headers: { "x-api-key": "sk-bad" },
    want: /Invalid API key/,
  },
];
for (const c of REQUEST_CASES) {
  Deno.test(`authenticateRequest() ${c.name}`, async () => {
    const req = new Request(`http://gw.test${c.url ?? "/v1/messages"}`, { headers: c.headers });
    const auth = {
      guard: createAuthGuard({ now: () => 0, log() {} }),
      credentials,
      address: "127.0.0.1",
      now: new Date(0),
      urlTraced: c.traced,
    };
    if (typeof c.want === "string") {
      assert.equal((await authenticateRequest(req, c.protocol, auth)).token.id, c.want);
    } else {
      await assert.rejects(
        authenticateRequest(req, c.protocol, auth),
        (err: Error) => c.want instanceof RegExp && c.want.test(err.message),
      );
    }
  });
}

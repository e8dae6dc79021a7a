/** @module Unit tests for reading a client's credential from its headers. */
import assert from "node:assert/strict";
import { readCredential } from "../../src/access/auth.ts";

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

/** @module What the gateway takes for a person's email: one address, trimmed and lower-cased, or none. */
import assert from "node:assert/strict";
import { emailAddress, emailDomain } from "../../src/core/email.ts";

const CASES: [unknown, string | undefined][] = [
  ["ada@example.com", "ada@example.com"],
  ["Ada@Example.COM", "ada@example.com"],
  [" ada@example.com", "ada@example.com"],
  ["ada@example.com \t\n", "ada@example.com"],
  ["\u00a0ada@example.com", "ada@example.com"],
  ["x@evil.example@ex.test", undefined],
  ["@ex.test", undefined],
  ["ada@", undefined],
  ["ada", undefined],
  ["ada @example.com", undefined],
  ["ada@exa\u0000mple.com", undefined],
  ["ada@exa\u200bmple.com", "ada@exa\u200bmple.com"],
  [`${"a".repeat(201)}@ex.test`, undefined],
  [`a@${"e".repeat(201)}`, undefined],
  ["", undefined],
  [42, undefined],
];

for (const [value, want] of CASES) {
  const shown = typeof value === "string"
    ? JSON.stringify(value).replace(/[^\x21-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : String(value);
  Deno.test(`emailAddress(${shown.slice(0, 40)}) is ${want ?? "none"}`, () => {
    assert.equal(emailAddress(value), want);
  });
}

Deno.test("emailDomain() is the text after the one @, and nothing for an email with two", () => {
  assert.equal(emailDomain(" Bob@Sub.Example.com"), "sub.example.com");
  assert.equal(emailDomain("x@evil.example@ex.test"), "");
  assert.equal(emailDomain("nobody"), "");
});

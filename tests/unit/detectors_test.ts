/**
 * @module Each built-in detector against true and false positives in the shapes real code and prose hold them: keys
 * in `.env` files, config and source, personal data in fixtures; and look-alikes from real code (documented example
 * keys, placeholders, hashes, timestamps, image names, SSH remotes, dates) that must stay as they are.
 */
import assert from "node:assert/strict";
import { DETECTORS } from "../../src/core/detectors.ts";
import { compileDetector, type GuardRun, scanRule, scanText } from "../../src/core/text_scan.ts";

const PEM_BODY =
  "qgwzLOrx3dnqrlIQlg5JqDz9daDAqj2QUKgrMZX0x6iWfMlYuk6osgBMkiNHelCx\neiphah9UD33GqQHBxRx43tfz00Fvlz6N44VqNBNYiAiWBBDZ7vkYdtKCXW7MSKd4\n";
const JWT =
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUiLCJpYXQiOjE3MDAwMDAwMDB9.XZYBxZZ7Q6FQgRuauTvmwmKNEG72344kSudI7-xrEgx";

/** Per kind: texts holding one match (the match is the part in «»), and texts holding none. */
const CASES: Record<string, { hits: string[]; misses: string[] }> = {
  aws_access_key: {
    hits: ["AWS_ACCESS_KEY_ID=«AKIAXLNXB4EI6OCLOY6V»", 'aws_access_key_id = "«ASIAXLNXB4EI6OCLOY6V»"'],
    misses: [
      "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
      "key: AKIAXXXXXXXXXXXXXXXX",
      "MAKIAXLNXB4EI6OCLOY6V",
      "AKIAXLNXB4EI6OCLOY6VQ",
    ],
  },
  github_token: {
    hits: [
      "GITHUB_TOKEN=«ghp_ewA7huWJGZdRcWVrjDUcOIGo25MsKxzbpUig»",
      "token: «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»",
    ],
    misses: [
      "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      "const prefix = 'ghp_';",
      "ghp_ewA7huWJGZdRcWVrjDUcOIGo25MsKxzbpUi",
    ],
  },
  slack_token: {
    hits: ['SLACK_BOT_TOKEN="«xoxb-64724751167-7191336589025-x4gN2UhlLqWMBfqX6x9TRRHU»"'],
    misses: ["SLACK_BOT_TOKEN=xoxb-your-bot-token", "xoxb-"],
  },
  google_api_key: {
    hits: ["GOOGLE_API_KEY=«AIzar6p7qWdGoRO2EbCePj_5Hd0Ho4Cd9tHZvIC»"],
    misses: ["apiKey: 'AIzaSy...'", "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"],
  },
  openai_key: {
    hits: [
      "OPENAI_API_KEY=«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»",
    ],
    misses: ["OPENAI_API_KEY=sk-proj-...", "Authorization: Bearer sk-mg-3f9a1c0d2b7e4f6a8c1d"],
  },
  anthropic_key: {
    hits: [
      "ANTHROPIC_API_KEY=«sk-ant-api03-xpTW_5wyDLACBudHJmKqOQBTTjLZIuW05CSCKP5c5MLBZRl0jQO4nt19enW3ViGV-7mOGIdQ8A13A30TtBNcnqsM1ZfpfAA»",
    ],
    misses: ["ANTHROPIC_API_KEY=sk-ant-api03-...", "sk-ant-"],
  },
  stripe_key: {
    hits: ["STRIPE_SECRET_KEY=«sk_live_7NLRwHlZvuCjp0xEFZo1zcfI»", "«rk_test_7NLRwHlZvuCjp0xEFZo1zcfI»"],
    misses: ["STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxx", "pk_live_7NLRwHlZvuCjp0xEFZo1zcfI", "sk_live_"],
  },
  private_key: {
    hits: [
      `key.pem:\n«-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}-----END RSA PRIVATE KEY-----»\n`,
      `"«-----BEGIN PRIVATE KEY-----\\n${PEM_BODY.replaceAll("\n", "\\n")}-----END PRIVATE KEY-----»"`,
      `«-----BEGIN OPENSSH PRIVATE KEY-----\n${PEM_BODY}-----END OPENSSH PRIVATE KEY-----»`,
    ],
    misses: [
      `-----BEGIN PUBLIC KEY-----\n${PEM_BODY}-----END PUBLIC KEY-----`,
      'if (pem.startsWith("-----BEGIN PRIVATE KEY-----")) return parse(pem);',
    ],
  },
  jwt: {
    hits: [`Authorization: Bearer «${JWT}»`, `{"id_token":"«${JWT}»"}`],
    misses: [
      "eyJhbGciOiJIUzI1NiJ9",
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.notbase64json.sig",
      // Two base64url JSON objects and a third part, but the first names no algorithm: not a JWS header.
      "eyJ0eXAiOiJjZmciLCJraWQiOiJtYWluIn0.eyJzdWIiOiIxMjM0IiwiaWF0IjoxfQ.c2lnbmF0dXJl",
      "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    ],
  },
  email: {
    hits: [
      "author: Jane Doe <«jane.doe@acme-corp.io»>",
      "contact «support+billing@example.co.uk».",
      // A local part of the longest length an address may have (64 characters).
      "to: «customer.support.escalations.for.the.enterprise.accounts.team.eu@acme-corp.io»",
    ],
    misses: [
      '<img src="logo@2x.png">',
      'import { z } from "npm:zod@4.1.0";',
      "git clone git@github.com:denoland/deno.git",
      'import "@types/node";',
      "ssh admin@localhost",
    ],
  },
  phone: {
    hits: ["Call «+44 20 7946 0958» today", "tel: «+1 (650) 555-0100»", '"phone": "«+4915112345678»"'],
    misses: ["offset: +0100", "x = a +1;", "const big = 1e+10;", "retry after +30 s"],
  },
  card: {
    hits: ["card: «4111 1111 1111 1111»", '"number": "«5555-5555-5555-4444»"', "amex «378282246310005»"],
    misses: [
      "created_at: 1700000000000",
      "Number.MAX_SAFE_INTEGER === 9007199254740991",
      "const ratio = 0.4111111111111111;",
      "card: 4111 1111 1111 1112",
      "0000 0000 0000 0000",
      "4111-1111 1111-1111",
    ],
  },
  iban: {
    hits: [
      "IBAN: «DE89 3704 0044 0532 0130 00»",
      "«GB82WEST12345698765432» (GBP)",
      "«FR1420041010050500013M02606» ANNUAL",
    ],
    misses: ["IBAN: DE89 3704 0044 0532 0130 01", "timestamps in ISO8601 format", "XX89370400440532013000"],
  },
  us_ssn: {
    hits: ["SSN: «512-44-7890»"],
    misses: ["000-12-3456", "666-12-3456", "123-45-6789", "date: 2024-01-15", "call 555-123-4567", "900-12-3456"],
  },
};

function scan(text: string, kind: string): string {
  const run: GuardRun = { hits: [], restores: new Map(), tag: () => "abcdef" };
  const rule = scanRule({ name: "r", action: "mask", restore: false, detectors: [compileDetector(DETECTORS[kind])] });
  return scanText(text, [rule], run, { scope: "input" });
}

for (const [kind, { hits, misses }] of Object.entries(CASES)) {
  Deno.test(`detector ${kind}: true positives are masked whole`, () => {
    for (const marked of hits) {
      const text = marked.replace(/[«»]/g, "");
      const expected = marked.replace(/«[^»]*»/, `[REDACTED:${kind}:abcdef]`);
      assert.equal(scan(text, kind), expected, text);
    }
  });
  Deno.test(`detector ${kind}: look-alikes from real code stay`, () => {
    for (const text of misses) assert.equal(scan(text, kind), text);
  });
}

Deno.test("every built-in kind has a table", () => {
  assert.deepEqual(Object.keys(CASES).sort(), Object.keys(DETECTORS).sort());
});

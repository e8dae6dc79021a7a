/** @module The config's `guardrails:` and a group's `guardrails: [names]`: the example loads, and each mistake is a start error naming its YAML path. */
import assert from "node:assert/strict";
import { parseConfig } from "../../src/core/config_load.ts";

function config(rules: string, names = "[no-secrets]"): string {
  return `
upstreams:
  - { name: a, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [m] }
groups:
  - { name: g, listing: anthropic, models: [m], guardrails: ${names} }
guardrails:
${rules}`;
}

const EXAMPLE = `
  - name: no-secrets
    detect: [secrets]
    scope: [input, output, tools]
    action: mask
    restore: true
  - name: policy
    webhook: { url: "https://policy.internal/check", headers: { Authorization: POLICY_TOKEN }, timeout_ms: 800, on_error: block }
    scope: [input]`;

const CASES: { name: string; text: string; error?: RegExp }[] = [
  { name: "loads the documented example", text: config(EXAMPLE, "[no-secrets, policy]") },
  {
    name: "a group naming an unknown rule",
    text: config(EXAMPLE, "[no-secrets, polcy]"),
    error: /groups\[0\]\.guardrails\[1\]: no guardrail is named "polcy"$/,
  },
  {
    name: "an unknown kind",
    text: config("  - { name: no-secrets, detect: [secrets, passwords] }"),
    error: /guardrails\[0\]\.detect\[1\]: must be one of secrets, pii, aws_access_key/,
  },
  {
    name: "a pattern that does not compile",
    text: config('  - { name: no-secrets, detect: [{ regex: "ticket-(\\\\d+", kind: ticket }] }'),
    error: /guardrails\[0\]\.detect\[0\]\.regex: is not a valid pattern/,
  },
  {
    name: "a pattern that matches the empty text",
    text: config('  - { name: no-secrets, detect: [{ regex: "x*", kind: ticket }] }'),
    error: /guardrails\[0\]\.detect\[0\]\.regex: matches the empty text$/,
  },
  {
    name: "a webhook URL that is not http(s)",
    text: config('  - { name: no-secrets, webhook: { url: "ftp://policy.internal/check" } }'),
    error: /guardrails\[0\]\.webhook\.url: must be an http\(s\) URL$/,
  },
  {
    name: "a webhook header value that is not an environment variable's name",
    text: config(
      '  - { name: no-secrets, webhook: { url: "https://p.internal/", headers: { Authorization: "Bearer x" } } }',
    ),
    error: /guardrails\[0\]\.webhook\.headers\.Authorization: must be an environment variable's name$/,
  },
  {
    name: "a webhook on output",
    text: config('  - { name: no-secrets, webhook: { url: "https://p.internal/" }, scope: [output] }'),
    error: /guardrails\[0\]\.scope: a webhook checks input and tools/,
  },
  {
    name: "restore without mask",
    text: config("  - { name: no-secrets, detect: [pii], action: block, restore: true }"),
    error: /guardrails\[0\]\.restore: is only for action: mask$/,
  },
  {
    name: "neither detect nor webhook",
    text: config("  - { name: no-secrets, scope: [input] }"),
    error: /guardrails\[0\]: needs exactly one of detect and webhook$/,
  },
  {
    name: "an unknown scope",
    text: config("  - { name: no-secrets, detect: [pii], scope: [prompt] }"),
    error: /guardrails\[0\]\.scope\[0\]: /,
  },
  {
    name: "two rules of one name",
    text: config("  - { name: no-secrets, detect: [pii] }\n  - { name: no-secrets, detect: [secrets] }"),
    error: /guardrails\[1\]\.name: duplicate guardrail "no-secrets"$/,
  },
];

for (const { name, text, error } of CASES) {
  Deno.test(`guardrails config: ${name}`, () => {
    if (!error) {
      const loaded = parseConfig(text, "gateway.yaml");
      assert.equal(loaded.guardrails[1].webhook?.on_error, "block");
      assert.deepEqual(loaded.groups[0].guardrails, ["no-secrets", "policy"]);
      return;
    }
    assert.throws(() => parseConfig(text, "gateway.yaml"), (err: Error) => {
      assert.match(err.message, error);
      return true;
    });
  });
}

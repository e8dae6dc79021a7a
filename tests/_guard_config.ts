/** @module The test config with guardrails: secrets masked everywhere and restored, personal data masked on input, for the default and oa groups; auto has none. */
import { testConfigYaml } from "./_helpers.ts";

/** The rules, in the words. */
export const GUARD_RULES = `guardrails:
  - { name: no-secrets, detect: [secrets], scope: [input, output, tools], action: mask, restore: true }
  - { name: pii, detect: [pii], scope: [input], action: mask }
`;

/** The test config with `rules`, named by the default and oa groups (`names`). */
export function guardedConfig(url: string, rules = GUARD_RULES, names = "[no-secrets, pii]"): string {
  return testConfigYaml(url, { extraYaml: rules })
    .replace("claude-nokey, gpt-test, claude-ha] }", `claude-nokey, gpt-test, claude-ha], guardrails: ${names} }`)
    .replace(
      "models: [gpt-test, claude-test, gpt-ha] }",
      `models: [gpt-test, claude-test, gpt-ha], guardrails: ${names} }`,
    );
}

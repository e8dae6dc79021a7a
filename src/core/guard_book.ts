/**
 * @module The guardrails of each group, compiled once at start: per scope, the detecting rules a scan runs and the
 * webhooks asked, so a request of a group without rules finds nothing to do and pays nothing.
 */
import type { GuardrailConfig } from "./guardrail_config.ts";
import { customDetector, DETECTORS, KIND_GROUPS } from "./detectors.ts";
import { compileDetector, type GuardScope, type ScanRule, scanRule } from "./text_scan.ts";

/** A webhook rule as configured. */
export type WebhookRule = GuardrailConfig & { webhook: NonNullable<GuardrailConfig["webhook"]> };

/** One group's rules by scope. */
export interface GuardPolicy {
  scan: Record<GuardScope, readonly ScanRule[]>;
  webhooks: Record<GuardScope, readonly WebhookRule[]>;
}

/** Every group's policy, by the group's name; a group without rules has none. */
export type GuardBook = ReadonlyMap<string, GuardPolicy>;

/** The groups' guardrails as a request meets them: the book, the placeholders' key, and the webhooks' fetch. */
export interface Guardrails {
  book: GuardBook;
  /** A placeholder's 6 hex digits for a match (keyed; see conversations/seal.ts). */
  tag(text: string): string;
  fetch: typeof fetch;
  env(name: string): string | undefined;
}

/** The scan rule of a detecting rule. */
function compiledRule(rule: GuardrailConfig): ScanRule {
  const kinds = new Set<string>();
  const detectors = [];
  for (const item of rule.detect ?? []) {
    if (typeof item !== "string") {
      detectors.push(compileDetector(customDetector(item.regex, item.kind, item.max_length)));
      continue;
    }
    for (const kind of KIND_GROUPS[item] ?? [item]) {
      if (kinds.has(kind)) continue;
      kinds.add(kind);
      detectors.push(compileDetector(DETECTORS[kind]));
    }
  }
  return scanRule({ name: rule.name, action: rule.action, restore: rule.restore, detectors });
}

/** The book of `rules` for `groups` (names already checked at load). */
export function guardBook(
  rules: readonly GuardrailConfig[],
  groups: readonly { name: string; guardrails?: readonly string[] }[],
): GuardBook {
  const byName = new Map(rules.map((rule) => [rule.name, rule]));
  const compiled = new Map<string, ScanRule>();
  const book = new Map<string, GuardPolicy>();
  for (const group of groups) {
    const names = group.guardrails ?? [];
    if (names.length === 0) continue;
    const policy: GuardPolicy = {
      scan: { input: [], output: [], tools: [] },
      webhooks: { input: [], output: [], tools: [] },
    };
    for (const name of names) {
      const rule = byName.get(name)!;
      for (const scope of rule.scope) {
        if (rule.webhook) (policy.webhooks[scope] as WebhookRule[]).push(rule as WebhookRule);
        else {
          if (!compiled.has(name)) compiled.set(name, compiledRule(rule));
          (policy.scan[scope] as ScanRule[]).push(compiled.get(name)!);
        }
      }
    }
    book.set(group.name, policy);
  }
  return book;
}

/** True when a policy may change or refuse what is answered: a rule on output, or one that restores on input. */
export function guardsAnswers(policy: GuardPolicy): boolean {
  return policy.scan.output.length > 0 || policy.scan.input.some((rule) => rule.restore);
}

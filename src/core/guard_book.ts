/**
 * @module The guardrails of each group, compiled once (a config group's at start, a group made through the admin API's
 * when a request of it first comes): per scope, the detecting rules a scan runs and the webhooks asked, so a request of
 * a group without rules finds nothing to do and pays nothing.
 */
import { GatewayError } from "./errors.ts";
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

/** A group as the guardrails see it: the rules it names, in order. */
export interface GuardedGroup {
  name: string;
  guardrails?: readonly string[];
}

/** Every group's policy, found by the rules the group names; a group without rules has none. */
export interface GuardBook {
  /** The group's policy; throws when it names a rule the config no longer has (its requests are refused, not let by). */
  policy(group: GuardedGroup): GuardPolicy | undefined;
}

/** How many lists of rule names the book keeps compiled before it starts again (admin groups are few). */
const MAX_POLICIES = 1000;

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

/** The book of `rules`, with the policies of the config's `groups` (their names already checked at load) made now. */
export function guardBook(rules: readonly GuardrailConfig[], groups: readonly GuardedGroup[]): GuardBook {
  const byName = new Map(rules.map((rule) => [rule.name, rule]));
  const compiled = new Map<string, ScanRule>();
  // By the list of names, so groups naming the same rules share one policy.
  const policies = new Map<string, GuardPolicy>();

  function compile(group: GuardedGroup, names: readonly string[]): GuardPolicy {
    const policy: GuardPolicy = {
      scan: { input: [], output: [], tools: [] },
      webhooks: { input: [], output: [], tools: [] },
    };
    for (const name of names) {
      const rule = byName.get(name);
      if (!rule) {
        throw new GatewayError(
          "unavailable",
          `Group "${group.name}" names guardrail "${name}", which this gateway's config does not define`,
        );
      }
      for (const scope of rule.scope) {
        if (rule.webhook) (policy.webhooks[scope] as WebhookRule[]).push(rule as WebhookRule);
        else {
          if (!compiled.has(name)) compiled.set(name, compiledRule(rule));
          (policy.scan[scope] as ScanRule[]).push(compiled.get(name)!);
        }
      }
    }
    return policy;
  }
  function policy(group: GuardedGroup): GuardPolicy | undefined {
    const names = group.guardrails ?? [];
    if (names.length === 0) return undefined;
    const key = JSON.stringify(names);
    let found = policies.get(key);
    if (!found) {
      found = compile(group, names);
      if (policies.size >= MAX_POLICIES) policies.clear();
      policies.set(key, found);
    }
    return found;
  }
  for (const group of groups) policy(group);
  return { policy };
}

/** True when a policy may change or refuse what is answered: a rule on output, or one that restores on input. */
export function guardsAnswers(policy: GuardPolicy): boolean {
  return policy.scan.output.length > 0 || policy.scan.input.some((rule) => rule.restore);
}

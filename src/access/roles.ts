/**
 * @module Who a person signed in through the identity provider is to the gateway: the first rule of
 * `auth.oidc.roles` they match (by a group of the `groups` claim, their email, or their email's domain) gives their
 * role and the token groups they may mint in. Pure: no KV, no network.
 */
import type { PERSON_ROLES } from "../core/auth_config.ts";
import type { RoleRule } from "../core/config.ts";

/** owner: everything, operators included; admin: all but owners' things; viewer: read only; member: their own. */
export type PersonRole = typeof PERSON_ROLES[number];

/** A person as the id_token describes them. */
export interface Person {
  /** Lower-cased. */
  email: string;
  name?: string;
  /** The values of the `groups` claim; empty when the provider sends none. */
  groups: string[];
}

/** What a person may do: their role, and the token groups they may mint their own tokens in. */
export interface Grant {
  role: PersonRole;
  token_groups: string[];
}

/** The domain part of an email, lower-cased; empty when there is no @. */
function domainOf(email: string): string {
  const at = email.lastIndexOf("@");
  return at < 0 ? "" : email.slice(at + 1).toLowerCase();
}

/** True when `rule` matches `person`: the group exactly, the email and the domain without regard to case. */
export function matches(rule: RoleRule, person: Person): boolean {
  if (rule.group !== undefined) return person.groups.includes(rule.group);
  if (rule.email !== undefined) return person.email.toLowerCase() === rule.email.toLowerCase();
  if (rule.domain !== undefined) return domainOf(person.email) === rule.domain.toLowerCase();
  return false;
}

/** The grant of the first rule `person` matches (first match wins), or undefined when none does. */
export function grantFor(person: Person, rules: readonly RoleRule[]): Grant | undefined {
  const rule = rules.find((rule) => matches(rule, person));
  return rule && { role: rule.role, token_groups: [...rule.token_groups] };
}

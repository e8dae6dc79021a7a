/**
 * @module Who a person signed in through the identity provider is to the gateway: the first rule of
 * `auth.oidc.roles` they match (by a group of the `groups` claim, their email, or their email's domain) gives their
 * role and the token groups they may mint in. Pure: no KV, no network.
 */
import type { PERSON_ROLES } from "../core/auth_config.ts";
import type { RoleRule } from "../core/config.ts";
import { emailAddress, emailDomain } from "../core/email.ts";

/** owner: everything, operators included; admin: all but owners' things; viewer: read only; member: their own. */
export type PersonRole = typeof PERSON_ROLES[number];

/** A person as the id_token describes them. */
export interface Person {
  /** One address, trimmed and lower-cased (see core/email.ts). */
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

/**
 * True when `rule` matches `person`: the group exactly, the email and the domain (the text after the email's one @)
 * without regard to case. An email that is not one address (two @, spaces inside) matches no email or domain rule.
 */
export function matches(rule: RoleRule, person: Person): boolean {
  if (rule.group !== undefined) return person.groups.includes(rule.group);
  if (rule.email !== undefined) return emailAddress(person.email) === emailAddress(rule.email);
  if (rule.domain !== undefined) return emailDomain(person.email) === rule.domain.trim().toLowerCase();
  return false;
}

/** The grant of the first rule `person` matches (first match wins), or undefined when none does. */
export function grantFor(person: Person, rules: readonly RoleRule[]): Grant | undefined {
  const rule = rules.find((rule) => matches(rule, person));
  return rule && { role: rule.role, token_groups: [...rule.token_groups] };
}

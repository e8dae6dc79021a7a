/**
 * @module People in KV: their roles as operators changed them (an entry per person that beats the config's rules,
 * holding a role or none: removed), their last sign-in, the grant both give them now, and whether the tokens they own
 * may be used. Keys: ["person_role", tag] -> RoleOverride, ["person_seen", tag] -> PersonSeen, where the tag is a hash
 * of the lower-cased email, so a console cookie can name the entry (to read it with the session in one go) without
 * naming the person. Changes that decide whether a person's tokens work bump the auth version, as token writes do.
 */
import type { RoleRule } from "../core/config.ts";
import { RETRY } from "../core/kv_write.ts";
import { type Grant, grantFor, type Person, type PersonRole } from "./roles.ts";
import type { Store } from "./store.ts";

/** A person's role as an owner or admin set it; `role: null` is a removed person, refused everywhere. */
export interface RoleOverride {
  email: string;
  role: PersonRole | null;
  token_groups: string[];
  updated_at: string;
  /** Who changed it (an email, or "admin key"). */
  updated_by: string;
}

/** The tag of a person: base64url(SHA-256) of their lower-cased email, 43 characters. */
export async function personTag(email: string): Promise<string> {
  const bytes = new TextEncoder().encode(`modelgate person ${email.toLowerCase()}`);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}

/** Where a person's override is kept, by their tag. */
export function overrideKey(tag: string): Deno.KvKey {
  return ["person_role", tag];
}

/** A person as they last signed in, for the people page: who they are and the groups the provider gave them. */
export interface PersonSeen {
  email: string;
  name?: string;
  groups: string[];
  signed_in_at: string;
}

/** Where a person's last sign-in is kept, by their tag. */
export function seenKey(tag: string): Deno.KvKey {
  return ["person_seen", tag];
}

/** The grant a person has now: an operator's override beats the rules; undefined when they have none. */
export function grantNow(person: Person, rules: readonly RoleRule[], override: RoleOverride | null): Grant | undefined {
  if (!override) return grantFor(person, rules);
  return override.role === null ? undefined : { role: override.role, token_groups: [...override.token_groups] };
}

function sameGroups(a: readonly string[], b: readonly string[]): boolean {
  const sorted = (groups: readonly string[]) => JSON.stringify([...groups].sort());
  return sorted(a) === sorted(b);
}

/** What {@linkcode recordSignIn} needs besides the store. */
export interface SignInRecord {
  now: Date;
  rules: readonly RoleRule[];
  log(line: Record<string, unknown>): void;
}

/**
 * Keeps a person's sign-in (who they are and the groups the provider gave them now), for the People page and for the
 * standing of their tokens. When they are new or their groups changed, the auth version is bumped with it, so every
 * instance's token cache judges their tokens again. An id_token without a `groups` claim while rules match on one is
 * logged, saying what to change: such rules match nobody.
 */
export async function recordSignIn(
  store: Store,
  person: Person & { groupsClaim?: boolean },
  { now, rules, log }: SignInRecord,
): Promise<void> {
  if (person.groupsClaim === false && rules.some((rule) => rule.group !== undefined)) {
    log({
      level: "warn",
      event: "sign_in_without_groups",
      email: person.email,
      advice: "auth.oidc.roles match on group, but this id_token has no groups claim, so no group rule matched: " +
        "add groups to auth.oidc.scopes, or have the provider put a groups claim in the id_token (see " +
        "docs/running-for-a-team.md, Rules for common providers)",
    });
  }
  const key = seenKey(await personTag(person.email));
  const seen: PersonSeen = {
    email: person.email,
    ...person.name === undefined ? {} : { name: person.name },
    groups: [...person.groups],
    signed_in_at: now.toISOString(),
  };
  await store.writes.write("person_seen", async () => {
    const before = await store.kv.get<PersonSeen>(key);
    const op = store.kv.atomic().check(before).set(key, seen);
    const unchanged = before.value !== null && sameGroups(before.value.groups, seen.groups);
    const ok = unchanged ? (await op.commit()).ok : await store.commitAuth(op);
    return ok ? true : RETRY;
  });
}

/** Why a person's tokens are refused: an operator removed them, or no rule gives them a role. */
export type Suspension = "removed" | "no_rule";

/**
 * Whether the tokens `owner` holds may be used now: undefined when they may, else why not. An override decides when
 * there is one; without one, the rules are applied to the email and groups of the person's last sign-in. A person who
 * never signed in and was never given a role here is not judged: an operator may hand a token to anyone.
 */
export async function suspensionOf(
  kv: Deno.Kv,
  rules: readonly RoleRule[],
  owner: string,
): Promise<Suspension | undefined> {
  const tag = await personTag(owner);
  const [override, seen] = await kv.getMany<[RoleOverride, PersonSeen]>([overrideKey(tag), seenKey(tag)]);
  if (override.value) return override.value.role === null ? "removed" : undefined;
  if (!seen.value || rules.length === 0) return undefined;
  return grantFor({ email: owner, groups: seen.value.groups }, rules) ? undefined : "no_rule";
}

/**
 * @module People's roles as operators changed them, in KV: an entry per person that beats the config's rules, holding
 * a role or none (removed). Keys: ["person_role", tag] -> RoleOverride, where the tag is a hash of the lower-cased
 * email, so a console cookie can name the entry (to read it with the session in one go) without naming the person.
 */
import type { PersonRole } from "./roles.ts";

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

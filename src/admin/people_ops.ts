/**
 * @module The admin service's operations on people signed in through the identity provider: listing them with the
 * role they have now (an override in KV, else what the config's rules give them), changing a role (which
 * beats the rules) and removing it (they are refused at their next page, on every instance, and the tokens they own
 * are revoked). Only an owner gives or takes the owner role. Every change is recorded in the audit trail.
 */
import { overrideKey, type PersonSeen, personTag, type RoleOverride, seenKey } from "../access/people.ts";
import { grantFor, type PersonRole } from "../access/roles.ts";
import type { RoleRule } from "../core/config.ts";
import { emailAddress } from "../core/email.ts";
import { GatewayError } from "../core/errors.ts";
import { invalidField } from "../core/validation.ts";
import type { OperatorOpsContext } from "./operator_ops.ts";
import { conflict } from "./refusals.ts";
import { parseInput, PersonUpdate } from "./schemas.ts";

/** A person as the admin API shows them. */
export interface PersonView {
  email: string;
  name: string | null;
  /** The role they have now; null when they have none (removed, or no rule matches). */
  role: PersonRole | null;
  /** Where the role comes from: an operator's change, or the config's rules (with the groups of the last sign-in). */
  source: "override" | "rules";
  token_groups: string[];
  signed_in_at: string | null;
  updated_at: string | null;
  updated_by: string | null;
}

/** An email as the path names it, as sign-in reads one (see core/email.ts); a 400 when it is none. */
function emailOf(value: string): string {
  const email = emailAddress(value);
  if (email === undefined) throw invalidField("email", "must be one email address (one @, no spaces)");
  return email;
}

/** A person as shown: an override's role, else what the config's rules give them now (groups as at their last sign-in). */
function view(email: string, seen: PersonSeen | null, override: RoleOverride | null, rules: RoleRule[]): PersonView {
  const ruled = override ? undefined : grantFor({ email, groups: seen?.groups ?? [] }, rules);
  return {
    email,
    name: seen?.name ?? null,
    role: override ? override.role : ruled?.role ?? null,
    source: override ? "override" : "rules",
    token_groups: override?.token_groups ?? ruled?.token_groups ?? [],
    signed_in_at: seen?.signed_in_at ?? null,
    updated_at: override?.updated_at ?? null,
    updated_by: override?.updated_by ?? null,
  };
}

/** The people operations, spread into the admin service; `revokeGrantsOf` ends a person's OAuth grants of /mcp. */
export function peopleOps(
  { ctx, mayChange, record }: OperatorOpsContext,
  revokeGrantsOf: (email: string, reason: string) => Promise<number>,
) {
  const { kv } = ctx.store;
  const { actor } = ctx;
  const rules = ctx.config.auth.oidc?.roles ?? [];

  async function read(email: string): Promise<{ view: PersonView; override: Deno.KvEntryMaybe<RoleOverride> }> {
    const tag = await personTag(email);
    const [seen, override] = await kv.getMany<[PersonSeen, RoleOverride]>([seenKey(tag), overrideKey(tag)]);
    return { view: view(email, seen.value, override.value, rules), override };
  }

  /** Only an owner makes or unmakes an owner, so an admin cannot raise anyone, themselves included, above admin. */
  function mayGive(role: PersonRole | null, before: PersonRole | null): void {
    mayChange();
    if ((role === "owner" || before === "owner") && actor.role !== "owner") {
      throw new GatewayError("permission", `The role "${actor.role}" of "${actor.name}" may not give or take "owner"`);
    }
  }

  async function write(email: string, role: PersonRole | null, tokenGroups: string[]): Promise<PersonView> {
    const { view: before, override } = await read(email);
    mayGive(role, before.role);
    const entry: RoleOverride = {
      email,
      role,
      token_groups: tokenGroups,
      updated_at: ctx.now().toISOString(),
      updated_by: actor.name,
    };
    const key = overrideKey(await personTag(email));
    // The auth version moves with it, so every instance judges the person's tokens again (see access/people.ts).
    const ok = await ctx.store.writes.write(
      "person_role",
      () => ctx.store.commitAuth(kv.atomic().check(override).set(key, entry)),
    );
    if (!ok) {
      throw conflict(`${email}'s role changed meanwhile; try again`);
    }
    const after = (await read(email)).view;
    await record(role === null ? "person.remove" : "person.update", email, before, after);
    if (role === null) await revokeTokensOf(email);
    // An MCP client's grant acts in the person's first token group: with none left, it has nothing to act in.
    if (tokenGroups.length === 0) {
      const why = role === null ? `${email} was removed by ${actor.name}` : `${email} was left without token groups`;
      await revokeGrantsOf(email, why);
    }
    return after;
  }

  /**
   * Revokes every active token `email` owns, each recorded as `token.revoke` by whoever removed them. Their tokens
   * are refused from the removal on anyway (suspended while the removal stands); revoking keeps them refused if the
   * person is given a role again, and shows it in every list.
   */
  async function revokeTokensOf(email: string): Promise<void> {
    for (const token of await ctx.store.listTokens()) {
      if (token.owner !== email || token.disabled) continue;
      const after = await ctx.store.revokeToken(token.id);
      if (after) await record("token.revoke", token.id, token, after);
    }
  }

  return {
    /** Everyone who signed in or whose role was set, by email. */
    async listPeople(): Promise<PersonView[]> {
      const people = new Map<string, { seen: PersonSeen | null; override: RoleOverride | null }>();
      for await (const entry of kv.list<PersonSeen>({ prefix: ["person_seen"] })) {
        people.set(entry.value.email, { seen: entry.value, override: null });
      }
      for await (const entry of kv.list<RoleOverride>({ prefix: ["person_role"] })) {
        const known = people.get(entry.value.email);
        people.set(entry.value.email, { seen: known?.seen ?? null, override: entry.value });
      }
      return [...people].sort(([a], [b]) => a.localeCompare(b)).map(([email, p]) =>
        view(email, p.seen, p.override, rules)
      );
    },
    async getPerson(email: string): Promise<PersonView> {
      return (await read(emailOf(email))).view;
    },
    /** Gives a person a role, beating the rules, from their next page on. */
    async setPersonRole(email: string, input: unknown): Promise<PersonView> {
      mayChange();
      const body = parseInput(PersonUpdate, input);
      for (const [i, name] of body.token_groups.entries()) {
        if (!await ctx.store.getGroup(name)) throw invalidField(`token_groups[${i}]`, `no group "${name}"`);
      }
      return await write(emailOf(email), body.role, body.token_groups);
    },
    /** Takes a person's role away: their sessions end at their next page, on every instance. */
    async removePerson(email: string): Promise<PersonView> {
      mayChange();
      return await write(emailOf(email), null, []);
    },
  };
}

/**
 * @module The admin service as a member sees it: their own tokens (list, read, create in their token groups with
 * themselves as owner and an expiry within the operator's bounds, revoke), their token groups and their own usage;
 * every other operation is refused by name.
 */
import type { Config, Limits } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { Group, TokenRecord } from "../core/principal.ts";
import { invalidField } from "../core/validation.ts";
import type { Actor } from "./audit.ts";
import { notFound } from "./refusals.ts";
import { parseInput, TokenCreate, UsageQuery } from "./schemas.ts";

/** A signed-in person whose role is member: who they are, and the groups they may create tokens in. */
export interface Member {
  email: string;
  token_groups: readonly string[];
}

/** The member an actor is, when its role is member: the service then answers only for their own tokens. */
export function memberOf(actor: Actor): Member | undefined {
  if (actor.role !== "member") return undefined;
  // A member without an email owns nothing: they see no token and may create none for anyone.
  return { email: actor.email ?? "", token_groups: actor.email ? actor.token_groups ?? [] : [] };
}

/** What the scope needs beyond the full service: usage counted over only some tokens, the clock, expiry bounds. */
export interface ScopeDeps {
  usageOf(query: ReturnType<typeof UsageQuery.parse>, tokens?: ReadonlySet<string>): Promise<unknown>;
  now(): Date;
  personalTokens: Config["auth"]["personal_tokens"];
}

const DAY_MS = 86_400_000;

/**
 * The expiry of a member's new token: the one asked for when it is at most `max_days` from now, the operator's
 * `default_days` when none is asked; never none (a 400 naming expires_at).
 */
function memberExpiry(asked: string | null | undefined, deps: ScopeDeps): string {
  const now = deps.now().getTime();
  const { default_days, max_days } = deps.personalTokens;
  if (asked === undefined) return new Date(now + default_days * DAY_MS).toISOString();
  const latest = new Date(now + max_days * DAY_MS).toISOString();
  if (asked === null || Date.parse(asked) > now + max_days * DAY_MS) {
    throw invalidField(
      "expires_at",
      `a member's token must expire within ${max_days} days, by ${latest} at the latest`,
    );
  }
  return asked;
}

/** What each refused operation is, in the words of its refusal. */
const REFUSED: Record<string, string> = {
  updateToken: "change a token (revoke it and create another instead)",
  createGroup: "create groups",
  updateGroup: "change groups",
  deleteGroup: "delete groups",
  deleteResponse: "delete stored responses",
  purgeResponses: "delete stored responses",
  requests: "read the request log",
  audit: "read the audit trail",
  listOperatorKeys: "list operator keys",
  createOperatorKey: "mint operator keys",
  revokeOperatorKey: "revoke operator keys",
  listPeople: "list people",
  getPerson: "read people's roles",
  setPersonRole: "change people's roles",
  removePerson: "remove people's roles",
  listOAuthGrants: "list the OAuth grants of /mcp",
  listOAuthClients: "list the OAuth clients of /mcp",
  revokeOAuthGrant: "revoke OAuth grants",
  cancelBatch: "cancel batches here (a token cancels its own through the batch API)",
};

/** The views of usage that can be counted over one person's tokens alone. */
const MEMBER_USAGE = new Set(["token", "owner", "day"]);

function refused(member: Member, what: string): GatewayError {
  return new GatewayError("permission", `A member ("${member.email}") may not ${what}`);
}

/** The limits a member asks for, each at or below the group's same limit where the group has one. */
function checkLimits(limits: Limits | undefined, group: Group): void {
  for (const [name, value] of Object.entries(limits ?? {})) {
    const cap = group.limits?.[name as keyof Limits];
    if (cap !== undefined && value !== undefined && value > cap) {
      throw invalidField(`limits.${name}`, `must be at most ${cap}, the limit of group "${group.name}"`);
    }
  }
}

/**
 * `service` scoped to `member`. Operations not named here are refused, so one added to the service later is refused
 * to members until it is given a member's meaning. Another person's token reads as one that does not exist.
 */
export function scopeToMember<S extends Record<string, unknown>>(service: S, member: Member, deps: ScopeDeps): S {
  // The service's own operations, as far as the scope calls them.
  const full = service as unknown as {
    listTokens(group?: string): Promise<TokenRecord[]>;
    getToken(id: string): Promise<TokenRecord>;
    createToken(input: unknown): Promise<unknown>;
    revokeToken(id: string): Promise<TokenRecord>;
    listGroups(): Promise<Group[]>;
    getGroup(name: string): Promise<Group>;
  };
  const email = member.email.toLowerCase();
  const groups = new Set(member.token_groups);
  const mine = (token: TokenRecord) => token.owner === email;

  async function ownToken(id: string): Promise<TokenRecord> {
    const token = await full.getToken(id);
    if (!mine(token)) throw notFound("Token", id);
    return token;
  }

  const allowed: Record<string, unknown> = {
    // Each operation below checks what a member may change; none is refused as a whole.
    mayChange: () => {},
    listTokens: async (group?: string) => (await full.listTokens(group)).filter(mine),
    getToken: ownToken,
    async createToken(input: unknown) {
      const body = parseInput(TokenCreate, input);
      if (!groups.has(body.group)) {
        const allowed = [...groups].map((name) => `"${name}"`).join(", ") || "none";
        throw refused(member, `create tokens in group "${body.group}" (their token groups: ${allowed})`);
      }
      if (body.owner !== undefined && body.owner !== email) throw refused(member, "create tokens for someone else");
      checkLimits(body.limits, await full.getGroup(body.group));
      return await full.createToken({ ...body, owner: email, expires_at: memberExpiry(body.expires_at, deps) });
    },
    async revokeToken(id: string) {
      await ownToken(id);
      return await full.revokeToken(id);
    },
    listGroups: async () => (await full.listGroups()).filter((group) => groups.has(group.name)),
    async getGroup(name: string) {
      if (!groups.has(name)) throw refused(member, `read group "${name}", which is not one of their token groups`);
      return await full.getGroup(name);
    },
    async usage(input: unknown) {
      const query = parseInput(UsageQuery, input);
      if (!MEMBER_USAGE.has(query.by)) throw refused(member, `see usage by ${query.by}, only their own tokens'`);
      const tokens = new Set((await full.listTokens()).filter(mine).map((token) => token.id));
      return await deps.usageOf(query, tokens);
    },
  };
  const scoped: Record<string, unknown> = {};
  for (const name of Object.keys(service)) {
    scoped[name] = name in allowed
      ? allowed[name]
      : () => Promise.reject(refused(member, REFUSED[name] ?? `use "${name}"`));
  }
  return scoped as S;
}

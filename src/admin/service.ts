/**
 * @module The operations on tokens, groups and usage that the admin API, the console and the CLI share: inputs are
 * checked with the admin schemas, failures are GatewayErrors (400 naming the field, 403, 404, 409), results are plain
 * JSON. Every change is refused to a viewer and recorded in the audit trail, with its actor and the values before and
 * after; a member gets the service scoped to their own tokens (see member_scope.ts). Tokens, stored Responses (one
 * by one or a token's all at once, whether or not the gateway still keeps new ones), usage, the audit trail and the
 * request log are here; groups (group_ops.ts), operators' keys (operator_ops.ts), people (people_ops.ts) and the
 * OAuth grants of /mcp (oauth_ops.ts) are operations of their own, spread into the service.
 */
import type { Store, TokenPatch } from "../access/store.ts";
import { responseStore } from "../conversations/store.ts";
import type { Config } from "../core/config.ts";
import { parseDuration, sinceMs } from "../core/duration.ts";
import { GatewayError } from "../core/errors.ts";
import type { Group, TokenRecord } from "../core/principal.ts";
import { invalidField } from "../core/validation.ts";
import { type DayCache, openSince } from "../usage/day_cache.ts";
import { requestLog, type UsageRow, usageTotals } from "../usage/query.ts";
import { type RequestLogEntry } from "../usage/log_entry.ts";
import { type Actor, type AuditRecord, auditTrail } from "./audit.ts";
import { groupOps } from "./group_ops.ts";
import { memberOf, scopeToMember } from "./member_scope.ts";
import { oauthOps } from "./oauth_ops.ts";
import { operatorOps } from "./operator_ops.ts";
import { peopleOps } from "./people_ops.ts";
import { notFound } from "./refusals.ts";
import { AuditQuery, LogQuery, parseInput, TokenCreate, TokenUpdate, UsageQuery } from "./schemas.ts";

/** What the service works on. */
export interface AdminContext {
  store: Store;
  config: Config;
  /** True when some upstream serves the public model id. */
  served(model: string): boolean;
  now(): Date;
  /** Who is asking, and from where: changes are allowed by its role and recorded under its name. */
  actor: Actor;
  /** Where a long-running gateway keeps closed days' usage totals; without it every read goes to KV. */
  usageDays?: DayCache;
}

/** What a usage query asks, once parsed. */
type UsageQueryInput = ReturnType<typeof UsageQuery.parse>;

/** Usage totals as the service answers them. */
export interface UsageAnswer {
  by: string;
  since: string;
  until: string;
  currency: string;
  data: UsageRow[];
}

/** How far the clocks of instances sharing a KV may disagree, as far as closing a day goes. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * How long after a request starts its usage may still be written: its deadline and its longest stream, the usage
 * flush and the clocks of other instances. A day is closed that long after its end.
 */
function lateMs(config: Config): number {
  const longest = Math.max(...config.upstreams.map((upstream) => upstream.total_timeout_ms));
  return config.routing.deadline_ms + longest + config.usage.flush_ms + CLOCK_SKEW_MS;
}

/** The first day of a range given as a date or as a duration back from now (7d = today and the six before). */
function sinceDay(since: string, now: Date): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(since)) return since;
  const back = Math.max(0, parseDuration(since) - 86_400_000);
  return new Date(now.getTime() - back).toISOString().slice(0, 10);
}

/** Builds the service over one store. */
export function adminService(ctx: AdminContext) {
  const { store } = ctx;
  const responses = responseStore(store.kv, {
    days: ctx.config.responses_store.days,
    now: () => ctx.now().getTime(),
    writes: store.writes,
  });
  const audit = auditTrail(store.kv, { days: ctx.config.audit.days, writes: store.writes });

  /**
   * Refuses a change to a role that may only read. A member never reaches the operations below unscoped: the
   * service they get (scopeToMember, at the end) decides each of their changes and refuses all others.
   */
  function mayChange(): void {
    if (ctx.actor.role === "viewer") {
      throw new GatewayError("permission", `The role "viewer" of "${ctx.actor.name}" may read but not change anything`);
    }
  }
  /** Records a change that was made. */
  async function record(action: string, target: string, before: unknown, after: unknown): Promise<void> {
    await audit.record(ctx.actor, { time: ctx.now(), action, target, before, after });
  }

  async function requireGroup(name: string, param: string): Promise<Group> {
    const group = await store.getGroup(name);
    if (!group) throw invalidField(param, `no group "${name}"`);
    return group;
  }
  /** Usage totals as asked, over every token or only `tokens`; by owner, each person's tokens added up. */
  async function usageOf(query: UsageQueryInput, tokens?: ReadonlySet<string>): Promise<UsageAnswer> {
    const now = ctx.now();
    const since = sinceDay(query.since, now);
    const until = query.until ?? now.toISOString().slice(0, 10);
    if (until < since) throw invalidField("until", "must not be before since");
    const closed = ctx.usageDays && { cache: ctx.usageDays, openSince: openSince(now.getTime(), lateMs(ctx.config)) };
    const owners = query.by === "owner"
      ? new Map((await store.listTokens()).flatMap((token) => token.owner ? [[token.id, token.owner]] : []))
      : undefined;
    const options = { by: query.by, since, until, name: query.name, perDay: !!query.per, owners, tokens };
    const data = await usageTotals(store.kv, options, closed);
    return { by: query.by, since, until, currency: ctx.config.currency, data };
  }

  // Revoking all of a person's grants is a part of removing them, not an operation of its own.
  const { revokeOAuthGrantsOf, ...oauth } = oauthOps({ ctx, mayChange, record });
  const service = {
    mayChange,
    ...operatorOps({ ctx, mayChange, record }),
    ...peopleOps({ ctx, mayChange, record }, revokeOAuthGrantsOf),
    ...groupOps({ ctx, mayChange, record }),
    ...oauth,
    async createToken(input: unknown): Promise<{ token: TokenRecord; secret: string }> {
      mayChange();
      const body = parseInput(TokenCreate, input);
      await requireGroup(body.group, "group");
      const expiresAt = body.expires_at ? new Date(body.expires_at) : undefined;
      const { secret, record: token } = await store.createToken({
        group: body.group,
        name: body.name,
        expiresAt,
        limits: body.limits,
        owner: body.owner,
        now: ctx.now(),
      });
      await record("token.create", token.id, null, token);
      return { token, secret };
    },
    async listTokens(group?: string): Promise<TokenRecord[]> {
      const tokens = await store.listTokens();
      return group === undefined ? tokens : tokens.filter((token) => token.group === group);
    },
    async getToken(id: string): Promise<TokenRecord> {
      return await store.getToken(id) ?? Promise.reject(notFound("Token", id));
    },
    async updateToken(id: string, input: unknown): Promise<TokenRecord> {
      mayChange();
      const body = parseInput(TokenUpdate, input);
      const before = await store.getToken(id);
      if (!before) throw notFound("Token", id);
      if (body.group !== undefined) await requireGroup(body.group, "group");
      const patch: TokenPatch = {};
      if (body.name !== undefined) patch.name = body.name;
      if (body.group !== undefined) patch.group = body.group;
      if (body.disabled !== undefined) patch.disabled = body.disabled;
      if (body.expires_at !== undefined) {
        patch.expires_at = body.expires_at === null ? null : new Date(body.expires_at).toISOString();
      }
      if (body.limits !== undefined) patch.limits = body.limits ?? undefined;
      const after = await store.updateToken(id, patch);
      if (!after) throw notFound("Token", id);
      // Turning a revoked token back on is what the console's restore button does; it is named as such.
      const action = before.disabled && !after.disabled
        ? "token.restore"
        : !before.disabled && after.disabled
        ? "token.revoke"
        : "token.update";
      await record(action, id, before, after);
      return after;
    },
    async revokeToken(id: string): Promise<TokenRecord> {
      mayChange();
      const before = await store.getToken(id);
      const after = before && await store.revokeToken(id);
      if (!before || !after) throw notFound("Token", id);
      await record("token.revoke", id, before, after);
      return after;
    },
    /** Deletes a stored response, whichever token made it. */
    async deleteResponse(id: string): Promise<{ id: string; object: "response"; deleted: true; token: string }> {
      mayChange();
      const owner = await responses.owner(id, (await store.listTokens()).map((token) => token.id));
      if (!owner || !await responses.delete(owner, id)) throw notFound("Response", id);
      await record("response.delete", id, { token: owner }, null);
      return { id, object: "response", deleted: true, token: owner };
    },
    /** Deletes every stored response of a token. */
    async purgeResponses(tokenId: string): Promise<{ token: string; deleted: number }> {
      mayChange();
      const token = await store.getToken(tokenId);
      if (!token) throw notFound("Token", tokenId);
      const deleted = await responses.purge(token.id);
      await record("response.purge", token.id, null, { deleted });
      return { token: token.id, deleted };
    },
    /** Cancels a batch, whoever made it, through `cancel` (which reaches its deployment); recorded in the trail. */
    async cancelBatch<T>(id: string, cancel: () => Promise<T>): Promise<T> {
      mayChange();
      const after = await cancel();
      await record("batch.cancel", id, null, after);
      return after;
    },
    usage: (input: unknown): Promise<UsageAnswer> => usageOf(parseInput(UsageQuery, input)),
    /** The audit trail, newest first, a page at a time. */
    async audit(input: unknown): Promise<{ data: AuditRecord[]; next_cursor: string | null }> {
      const query = parseInput(AuditQuery, input);
      const since = query.since === undefined ? undefined : sinceMs(query.since, ctx.now());
      try {
        return await audit.list({ ...query, since });
      } catch (err) {
        if (err instanceof RangeError) throw invalidField("cursor", "must be the next_cursor of an earlier page");
        throw err;
      }
    },
    async requests(input: unknown): Promise<{ currency: string; data: RequestLogEntry[] }> {
      const query = parseInput(LogQuery, input);
      const since = query.since === undefined ? undefined : sinceMs(query.since, ctx.now());
      const data = await requestLog(store.kv, {
        since,
        token_id: query.token,
        owner: query.owner,
        group: query.group,
        model: query.model,
        session_id: query.session,
        status: query.status,
        upstream: query.upstream,
        affinity: query.affinity,
        limit: query.limit,
      });
      return { currency: ctx.config.currency, data };
    },
  };
  const member = memberOf(ctx.actor);
  const personalTokens = ctx.config.auth.personal_tokens;
  return member ? scopeToMember(service, member, { usageOf, now: ctx.now, personalTokens }) : service;
}

/** The service's type, for callers that receive one. */
export type AdminService = ReturnType<typeof adminService>;

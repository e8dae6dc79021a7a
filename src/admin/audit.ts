/**
 * @module The audit trail in KV: who changed what through the admin API, the console or the CLI, from where, with the
 * values before and after; kept for audit.days, read newest first with filters and a cursor.
 * Keys: ["audit", time_ms, id] -> AuditRecord, so a reverse list is newest first.
 */
import type { KvWriter } from "../core/kv_write.ts";

/**
 * What an operator may do: owner everything, admin all but owners' keys, viewer only read; member (a person signed
 * in through the identity provider with that role) only their own tokens and usage.
 */
export type Role = "owner" | "admin" | "viewer" | "member";

/** Who makes a change, and from where; the service records it with every change. */
export interface Actor {
  /** "admin key", "cli", an operator key's name, or a signed-in person's email. */
  name: string;
  role: Role;
  /** The person's email, when a person signed in through the identity provider acts. */
  email?: string;
  /** The token groups the person may mint their own tokens in (their grant's). */
  token_groups?: string[];
  /** The operator key the change was made with, when one was. */
  key_id?: string;
  /** `oauth` for what the authorization server of /mcp did on a person's or a client's request. */
  via: "api" | "console" | "cli" | "oauth";
  ip?: string;
  user_agent?: string;
}

/** One change as recorded. Before and after are the records as the admin API shows them, which hold no secret. */
export interface AuditRecord {
  id: string;
  time: string;
  actor: string;
  actor_key: string | null;
  via: Actor["via"];
  action: string;
  target: string;
  before: unknown;
  after: unknown;
  ip: string | null;
  user_agent: string | null;
}

/** Every action the trail records, for filters to offer. */
export const AUDIT_ACTIONS = [
  "token.create",
  "token.update",
  "token.revoke",
  "token.restore",
  "group.create",
  "group.update",
  "group.delete",
  "response.delete",
  "response.purge",
  "batch.cancel",
  "operator_key.create",
  "operator_key.revoke",
  "person.update",
  "person.remove",
  "oauth_client.register",
  "oauth_grant.create",
  "oauth_grant.refresh",
  "oauth_grant.revoke",
  "oauth.refused",
] as const;

/** What a read of the trail asks for. */
export interface AuditQuery {
  /** An actor's name or operator key id. */
  actor?: string;
  action?: string;
  /** Epoch ms: only changes at or after it. */
  since?: number;
  limit: number;
  /** Where the previous page ended. */
  cursor?: string;
}

/** A user agent is the client's to choose: it is kept short so no client can fill the trail. */
const USER_AGENT_MAX = 256;
/** How many records one read looks at, at most, to fill a filtered page. */
const SCAN_MAX = 10_000;

function newId(): string {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0"));
  return `aud_${hex.join("")}`;
}

/** The key a cursor (`<time_ms>_<id>` of the last record of a page) stands for; the next page ends before it. */
function cursorKey(cursor: string): Deno.KvKey {
  const match = /^(\d{1,15})_(aud_[0-9a-f]{16})$/.exec(cursor);
  if (!match) throw new RangeError("not a cursor");
  return ["audit", Number(match[1]), match[2]];
}

/** The audit trail over one KV. */
export function auditTrail(kv: Deno.Kv, options: { days: number; writes: KvWriter }) {
  return {
    /** Records one change, kept for the configured days. */
    async record(
      actor: Actor,
      change: { time: Date; action: string; target: string; before?: unknown; after?: unknown },
    ): Promise<AuditRecord> {
      const record: AuditRecord = {
        id: newId(),
        time: change.time.toISOString(),
        actor: actor.name,
        actor_key: actor.key_id ?? null,
        via: actor.via,
        action: change.action,
        target: change.target,
        before: change.before ?? null,
        after: change.after ?? null,
        ip: actor.ip ?? null,
        user_agent: actor.user_agent?.slice(0, USER_AGENT_MAX) ?? null,
      };
      const key = ["audit", change.time.getTime(), record.id];
      await options.writes.write("audit", () => kv.set(key, record, { expireIn: options.days * 86_400_000 }));
      return record;
    },
    /** A page of records, newest first, and the cursor of the next page when there may be one. */
    async list(query: AuditQuery): Promise<{ data: AuditRecord[]; next_cursor: string | null }> {
      const after = query.cursor === undefined ? undefined : cursorKey(query.cursor);
      const selector = {
        ...(query.since === undefined ? { prefix: ["audit"] } : { start: ["audit", query.since] }),
        ...(after ? { end: after } : query.since === undefined ? {} : { end: ["audit", Number.MAX_SAFE_INTEGER] }),
      } as Deno.KvListSelector;
      const data: AuditRecord[] = [];
      let scanned = 0;
      for await (const entry of kv.list<AuditRecord>(selector, { reverse: true, batchSize: 500 })) {
        const r = entry.value;
        const matches = (query.actor === undefined || r.actor === query.actor || r.actor_key === query.actor) &&
          (query.action === undefined || r.action === query.action);
        if (matches) data.push(r);
        // A page ends when it is full, or when a sparse filter has looked far enough for one read.
        if (data.length === query.limit || ++scanned >= SCAN_MAX) {
          return { data, next_cursor: `${Date.parse(r.time)}_${r.id}` };
        }
      }
      return { data, next_cursor: null };
    },
  };
}

/** The audit trail's type, for callers that receive one. */
export type AuditTrail = ReturnType<typeof auditTrail>;

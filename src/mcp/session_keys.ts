/**
 * @module Where a client's MCP session lives in KV, and writing it with the entries that follow it: its record
 * (["mcp_session", id]), its place among its token's open sessions (["mcp_token_session", token, created, id], with
 * when it was last used), the count of the token's openings that keeps two at once apart, and, while it has sessions
 * open with servers, its due entry (["mcp_session_due", when it expires, id]) by which an instance ends those sessions
 * once it expires; and the record's shape.
 */
/** A session the gateway opened with one HTTP server for a client session. */
export interface UpstreamRef {
  /** The server's session id; absent for a server that keeps no sessions. */
  id?: string;
  version: string;
}

/** One client's session. */
export interface ClientSession {
  id: string;
  token_id: string;
  /** The protocol version agreed at initialize. */
  version: string;
  created_at: number;
  /** When the session was last used, as far as its record says (pushed on at most once a minute). */
  touched_at: number;
  /** Per server name, the session opened there for this client. */
  upstream: Record<string, UpstreamRef>;
}

/** The first part of every due entry's key, which sorts them by when they fall due. */
export const DUE = "mcp_session_due";

/** A due entry outlives its session this long, so a sweep that comes late still finds it. */
const DUE_GRACE_MS = 86_400_000;

/** A session's record. */
export const record = (id: string): Deno.KvKey => ["mcp_session", id];

/** The prefix of a token's open sessions, oldest first. */
export const byToken = (tokenId: string): Deno.KvKey => ["mcp_token_session", tokenId];

/** The count of a token's openings. */
export const openings = (tokenId: string): Deno.KvKey => ["mcp_token_sessions", tokenId];

const place = (session: ClientSession): Deno.KvKey => [
  ...byToken(session.token_id),
  session.created_at,
  session.id,
];

/** A session's due entry, when it has sessions open with servers. */
export const due = (session: ClientSession, idleMs: number): Deno.KvKey => [
  DUE,
  session.touched_at + idleMs,
  session.id,
];

/** True when a session has sessions open with servers. */
export const hasUpstream = (session: ClientSession): boolean => Object.keys(session.upstream).length > 0;

/** Writes in `op` a session's change from `before` to `after` (null: none), with the entries that follow it. */
export function change(
  op: Deno.AtomicOperation,
  before: ClientSession | null,
  after: ClientSession | null,
  idleMs: number,
): Deno.AtomicOperation {
  if (before && !after) op.delete(record(before.id)).delete(place(before));
  if (before && hasUpstream(before) && !(after && hasUpstream(after) && after.touched_at === before.touched_at)) {
    op.delete(due(before, idleMs));
  }
  if (after) {
    op.set(record(after.id), after, { expireIn: idleMs }).set(place(after), after.touched_at, { expireIn: idleMs });
    if (hasUpstream(after)) op.set(due(after, idleMs), after.upstream, { expireIn: idleMs + DUE_GRACE_MS });
  }
  return op;
}

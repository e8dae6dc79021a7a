/**
 * @module What the gateway's OAuth authorization server for /mcp is given at start: its settings, the fetch that reads
 * client id metadata documents (a test seam: production fetches the https URL itself), where its audit entries go
 * (the admin audit trail, passed in from above), and its counts by event and outcome for the metrics page.
 */
import type { Config } from "../core/config.ts";
import type { GrantLifetimes } from "./oauth_grants.ts";

/** The events counted, and the outcomes each may have: fixed sets, so no client input becomes a label. */
export const OAUTH_EVENTS = ["register", "authorize", "consent", "token", "refresh", "revoke", "access"] as const;
export const OAUTH_OUTCOMES = ["ok", "refused", "denied", "reused", "revoked"] as const;

export type OAuthEvent = typeof OAUTH_EVENTS[number];
export type OAuthOutcome = typeof OAUTH_OUTCOMES[number];

/** One entry of the audit trail about OAuth: who (a person's email, a token, or a client), what, and the details. */
export interface OAuthAuditEntry {
  who: string;
  action: string;
  target: string;
  before?: unknown;
  after?: unknown;
  ip?: string;
  user_agent?: string;
}

/** The authorization server's dependencies. */
export interface OAuthServer {
  enabled: boolean;
  lives: GrantLifetimes;
  /** How client id metadata documents are fetched. */
  fetch: typeof fetch;
  /** Writes one entry to the audit trail. */
  audit(entry: OAuthAuditEntry): Promise<void>;
  count(event: OAuthEvent, outcome: OAuthOutcome): void;
  /** Counts so far, keyed `event outcome`. */
  counts(): ReadonlyMap<string, number>;
}

/** The server for a config, with its fetch and audit sink. */
export function oauthServer(
  config: Config,
  options: { fetch: typeof fetch; audit(entry: OAuthAuditEntry): Promise<void> },
): OAuthServer {
  const settings = config.auth.mcp_oauth;
  const counts = new Map<string, number>();
  return {
    enabled: settings.enabled,
    lives: { accessMs: settings.access_token_minutes * 60_000, refreshMs: settings.refresh_token_days * 86_400_000 },
    fetch: options.fetch,
    audit: options.audit,
    count(event, outcome) {
      const key = `${event} ${outcome}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    },
    counts: () => counts,
  };
}

/**
 * @module OAuth grants for /mcp in KV: the authorization codes (single-use and short-lived across instances), the
 * grants they start, and each grant's access and refresh tokens, of which only SHA-256 hashes are kept. A refresh
 * rotates the refresh token; an old one presented again revokes the whole grant, and so does a code redeemed twice.
 * Keys: ["oauth_code", hash] -> CodeRecord, ["oauth_grant", id] -> OAuthGrant, ["oauth_access", hash] -> AccessRecord,
 * ["oauth_refresh", hash] -> RefreshRecord.
 */
import { RETRY } from "../core/kv_write.ts";
import { grantIdOf, newAccessToken, newSecret } from "./oauth_rules.ts";
import { hashToken, type Store } from "./store.ts";

/** Who a grant acts for: a person signed in through the identity provider, or one of the gateway's tokens. */
export type OAuthSubject =
  | { kind: "person"; email: string }
  | { kind: "token"; token_id: string; token_hash: string; owner?: string };

/** One client's grant of one person (or token), with the family of tokens it issued. */
export interface OAuthGrant {
  /** `oag_` and 16 hex digits. */
  id: string;
  client_id: string;
  client_name: string;
  subject: OAuthSubject;
  /** The /mcp URL its tokens are for. */
  resource: string;
  created_at: string;
  /** When its refresh token was last used. */
  refreshed_at: string | null;
  /** When the newest refresh token stops working; the grant ends then unless refreshed. */
  expires_at: string;
  /** The number of the one refresh token that works; any earlier one is a replay. */
  generation: number;
}

/** An authorization code's record: the grant it starts and what its token request must match. */
export interface CodeRecord {
  grant: OAuthGrant;
  redirect_uri: string;
  code_challenge: string;
  /** Epoch ms after which the code is refused. */
  expires_at: number;
  /** True once redeemed: kept until the record expires, so a second redemption is seen and revokes the grant. */
  used: boolean;
}

interface AccessRecord {
  grant_id: string;
  expires_at: number;
}

interface RefreshRecord {
  grant_id: string;
  generation: number;
}

/** What a successful code or refresh gives the client. */
export interface IssuedTokens {
  grant: OAuthGrant;
  access_token: string;
  refresh_token: string;
  /** Seconds the access token works. */
  expires_in: number;
}

/** How long the gateway's OAuth secrets work. */
export interface GrantLifetimes {
  accessMs: number;
  refreshMs: number;
}

/** How long a code works, and how long its record is kept to catch a second redemption. */
export const CODE_MS = 60_000;
const CODE_KEPT_MS = 10 * 60_000;

const key = {
  code: async (code: string): Promise<Deno.KvKey> => ["oauth_code", await hashToken(code)],
  grant: (id: string): Deno.KvKey => ["oauth_grant", id],
  access: async (token: string): Promise<Deno.KvKey> => ["oauth_access", await hashToken(token)],
  refresh: async (token: string): Promise<Deno.KvKey> => ["oauth_refresh", await hashToken(token)],
};

/** A new grant id. */
export function newGrantId(): string {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0"));
  return `oag_${hex.join("")}`;
}

/** Keeps a code for `record`; answers the code, shown only to the client's redirect. */
export async function issueCode(store: Store, record: Omit<CodeRecord, "used">): Promise<string> {
  const code = newSecret("code");
  const entry: CodeRecord = { ...record, used: false };
  const where = await key.code(code);
  await store.writes.write("oauth_code", () => store.kv.set(where, entry, { expireIn: CODE_KEPT_MS }));
  return code;
}

/** How redeeming a code went. */
export type Redeemed =
  | { status: "ok"; record: CodeRecord }
  | { status: "reused"; record: CodeRecord }
  | { status: "unknown" | "expired" };

/** Marks a code used, once across every instance; a second redemption is told apart so its grant can be revoked. */
export async function redeemCode(store: Store, code: string, now: number): Promise<Redeemed> {
  const where = await key.code(code);
  return await store.writes.write("oauth_code", async (): Promise<Redeemed | typeof RETRY> => {
    const entry = await store.kv.get<CodeRecord>(where);
    const record = entry.value;
    if (!record) return { status: "unknown" };
    if (record.used) return { status: "reused", record };
    if (record.expires_at <= now) return { status: "expired" };
    const op = store.kv.atomic().check(entry).set(where, { ...record, used: true }, { expireIn: CODE_KEPT_MS });
    return (await op.commit()).ok ? { status: "ok", record } : RETRY;
  });
}

/** Writes a new access and refresh token of `grant` in `op`; answers them. */
async function mint(op: Deno.AtomicOperation, grant: OAuthGrant, now: number, lives: GrantLifetimes) {
  const access_token = newAccessToken(grant.id);
  const refresh_token = newSecret("refresh");
  const access: AccessRecord = { grant_id: grant.id, expires_at: now + lives.accessMs };
  const refresh: RefreshRecord = { grant_id: grant.id, generation: grant.generation };
  op.set(await key.access(access_token), access, { expireIn: lives.accessMs });
  op.set(await key.refresh(refresh_token), refresh, { expireIn: lives.refreshMs });
  return { access_token, refresh_token, expires_in: Math.floor(lives.accessMs / 1000) };
}

/** Starts `grant` (from a redeemed code) with its first tokens. */
export async function startGrant(
  store: Store,
  grant: OAuthGrant,
  now: number,
  lives: GrantLifetimes,
): Promise<IssuedTokens> {
  const started: OAuthGrant = { ...grant, expires_at: new Date(now + lives.refreshMs).toISOString(), generation: 1 };
  return await store.writes.write("oauth_grant", async () => {
    const op = store.kv.atomic().check({ key: key.grant(grant.id), versionstamp: null });
    op.set(key.grant(grant.id), started, { expireIn: lives.refreshMs });
    const tokens = await mint(op, started, now, lives);
    return (await op.commit()).ok ? { grant: started, ...tokens } : RETRY;
  });
}

/** How a refresh went: new tokens, a replayed token (its grant revoked), or nothing known of it. */
export type Refreshed =
  | { status: "ok"; tokens: IssuedTokens; before: OAuthGrant }
  | { status: "reused"; grant: OAuthGrant }
  | { status: "unknown" };

/**
 * Rotates a grant's refresh token: the presented one must be the newest of its grant, and `accept` (the client and
 * resource checks) must pass; a superseded one revokes the grant (RFC 9700, section 4.14.2).
 */
export async function refreshGrant(
  store: Store,
  refreshToken: string,
  options: { now: number; lives: GrantLifetimes; accept(grant: OAuthGrant): Promise<void> },
): Promise<Refreshed> {
  const where = await key.refresh(refreshToken);
  const record = (await store.kv.get<RefreshRecord>(where)).value;
  if (!record) return { status: "unknown" };
  return await store.writes.write("oauth_grant", async (): Promise<Refreshed | typeof RETRY> => {
    const entry = await store.kv.get<OAuthGrant>(key.grant(record.grant_id));
    const grant = entry.value;
    // KV drops an expired record a while after its time; the grant's own deadline is what counts.
    if (!grant || Date.parse(grant.expires_at) <= options.now) return { status: "unknown" };
    if (grant.generation !== record.generation) {
      await revokeGrant(store, grant.id);
      return { status: "reused", grant };
    }
    await options.accept(grant);
    const { now, lives } = options;
    const next: OAuthGrant = {
      ...grant,
      refreshed_at: new Date(now).toISOString(),
      expires_at: new Date(now + lives.refreshMs).toISOString(),
      generation: grant.generation + 1,
    };
    const op = store.kv.atomic().check(entry).set(key.grant(grant.id), next, { expireIn: lives.refreshMs });
    const tokens = await mint(op, next, now, lives);
    return (await op.commit()).ok ? { status: "ok", tokens: { grant: next, ...tokens }, before: grant } : RETRY;
  });
}

/** Ends a grant: every token it issued is refused from then on. Answers the grant, or null when there was none. */
export async function revokeGrant(store: Store, id: string): Promise<OAuthGrant | null> {
  return await store.writes.write("oauth_grant", async () => {
    const entry = await store.kv.get<OAuthGrant>(key.grant(id));
    if (!entry.value) return null;
    return (await store.kv.atomic().check(entry).delete(key.grant(id)).commit()).ok ? entry.value : RETRY;
  });
}

/** The grant with this id, or null. */
export async function getGrant(store: Store, id: string): Promise<OAuthGrant | null> {
  return (await store.kv.get<OAuthGrant>(key.grant(id))).value;
}

/** Every live grant, oldest first. */
export async function listGrants(store: Store): Promise<OAuthGrant[]> {
  const grants: OAuthGrant[] = [];
  for await (const entry of store.kv.list<OAuthGrant>({ prefix: ["oauth_grant"] })) grants.push(entry.value);
  return grants.sort((a, b) => a.created_at.localeCompare(b.created_at));
}

/** An access token's grant, read with the token in one go; null when either is gone or the token has expired. */
export async function grantOfAccessToken(
  store: Store,
  token: string,
  grantId: string,
  now: number,
): Promise<OAuthGrant | null> {
  const [access, grant] = await store.kv.getMany<[AccessRecord, OAuthGrant]>([
    await key.access(token),
    key.grant(grantId),
  ]);
  if (!access.value || access.value.grant_id !== grantId || access.value.expires_at <= now) return null;
  return grant.value;
}

/** The grant of an access or a refresh token, for its revocation (RFC 7009); null when it names none. */
export async function grantOfSecret(store: Store, token: string, now: number): Promise<OAuthGrant | null> {
  const id = grantIdOf(token);
  if (id) return await grantOfAccessToken(store, token, id, now);
  const record = (await store.kv.get<RefreshRecord>(await key.refresh(token))).value;
  return record ? await getGrant(store, record.grant_id) : null;
}

/** A grant as the admin API, the console and the audit trail show it: no hash, no secret. */
export interface GrantView {
  id: string;
  client_id: string;
  client_name: string;
  /** The person's email, or the owner of the token it was made with (null when that token has none). */
  person: string | null;
  /** The id of the token it was made with, for a grant made without the identity provider. */
  token: string | null;
  /** The group it acts in now, when known. */
  group?: string;
  resource: string;
  created_at: string;
  refreshed_at: string | null;
  expires_at: string;
}

/** The view of a grant, with the group it acts in when known. */
export function grantView(grant: OAuthGrant, group?: string): GrantView {
  const { subject } = grant;
  return {
    id: grant.id,
    client_id: grant.client_id,
    client_name: grant.client_name,
    person: subject.kind === "person" ? subject.email : subject.owner ?? null,
    token: subject.kind === "token" ? subject.token_id : null,
    ...group === undefined ? {} : { group },
    resource: grant.resource,
    created_at: grant.created_at,
    refreshed_at: grant.refreshed_at,
    expires_at: grant.expires_at,
  };
}

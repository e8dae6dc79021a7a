/**
 * @module An authorization request of /mcp's OAuth between `/oauth/authorize` and the person's decision on the consent
 * page: what the client asked (checked already), the browser it is bound to (a hash of a cookie's secret, so a link
 * to another's request is refused), and once they signed in, who the person is. Kept 10 minutes; taken once.
 * Keys: ["oauth_pending", sha256(request id)] -> Pending.
 */
import { RETRY } from "../core/kv_write.ts";
import type { OAuthSubject } from "./oauth_grants.ts";
import { hashToken, type Store } from "./store.ts";

/** How long a person has between the client's request and their decision. */
export const PENDING_MS = 10 * 60_000;

/** One authorization request waiting for the person. */
export interface Pending {
  client_id: string;
  client_name: string;
  redirect_uri: string;
  code_challenge: string;
  /** The client's state, given back exactly; absent when it sent none. */
  state?: string;
  resource: string;
  /** SHA-256 of the secret in the browser's cookie. */
  browser: string;
  /** Who signed in, once they have; the consent page is shown only then. */
  subject?: OAuthSubject;
  expires_at: number;
}

const keyOf = async (id: string): Promise<Deno.KvKey> => ["oauth_pending", await hashToken(id)];

/** A random id for a request or a browser's secret: 32 bytes, base64url. */
export function randomId(): string {
  return crypto.getRandomValues(new Uint8Array(32)).toBase64({ alphabet: "base64url", omitPadding: true });
}

/** Keeps a checked request for the browser holding `browserSecret`; answers its id. */
export async function startPending(
  store: Store,
  request: Omit<Pending, "browser" | "expires_at">,
  browserSecret: string,
  now: number,
): Promise<string> {
  const id = randomId();
  const pending: Pending = { ...request, browser: await hashToken(browserSecret), expires_at: now + PENDING_MS };
  const where = await keyOf(id);
  await store.writes.write("oauth_pending", () => store.kv.set(where, pending, { expireIn: PENDING_MS }));
  return id;
}

/** The request with this id when the browser's secret is the one it was started with and it has not expired. */
export async function readPending(
  store: Store,
  id: string | null,
  browserSecret: string | undefined,
  now: number,
): Promise<Deno.KvEntry<Pending> | undefined> {
  if (!id || !browserSecret || !/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
  const entry = await store.kv.get<Pending>(await keyOf(id));
  if (!entry.value || entry.value.expires_at <= now) return undefined;
  if (entry.value.browser !== await hashToken(browserSecret)) return undefined;
  return entry as Deno.KvEntry<Pending>;
}

/** Notes who signed in for request `id` (checked by the caller); false when it is gone meanwhile. */
export async function attachSubject(
  store: Store,
  id: string,
  subject: OAuthSubject,
  now: number,
): Promise<boolean> {
  const where = await keyOf(id);
  return await store.writes.write("oauth_pending", async () => {
    const entry = await store.kv.get<Pending>(where);
    if (!entry.value) return false;
    const expireIn = Math.max(1, entry.value.expires_at - now);
    const op = store.kv.atomic().check(entry).set(where, { ...entry.value, subject }, { expireIn });
    return (await op.commit()).ok ? true : RETRY;
  });
}

/** Takes the request out of KV, once: true for the first decision on it on any instance, false after. */
export async function takePending(store: Store, id: string, entry: Deno.KvEntry<Pending>): Promise<boolean> {
  const where = await keyOf(id);
  return await store.writes.write("oauth_pending", async () => {
    return (await store.kv.atomic().check(entry).delete(where).commit()).ok;
  });
}

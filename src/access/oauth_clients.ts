/**
 * @module The OAuth clients of /mcp: public clients registered dynamically (RFC 7591) and kept in KV, and clients whose
 * id is the https URL of a client id metadata document, fetched (no redirects, a size and time limit), checked and
 * cached in KV. Both must name redirect URIs the rules of ./oauth_rules.ts allow.
 * Keys: ["oauth_client", client_id] -> OAuthClient, ["oauth_cimd", sha256(url)] -> OAuthClient.
 */
import { GatewayError } from "../core/errors.ts";
import { isObject } from "../core/types.ts";
import { clientIdUrlProblem, isUrlClientId, MAX_URI_LENGTH, redirectProblem } from "./oauth_rules.ts";
import { hashToken, type Store } from "./store.ts";

/** A client as the gateway knows it. */
export interface OAuthClient {
  client_id: string;
  /** As the client named itself (shown escaped on the consent page), or its id's host when it named nothing. */
  client_name: string;
  redirect_uris: string[];
  /** `registered` for a dynamic registration, `metadata` for a client id metadata document. */
  kind: "registered" | "metadata";
  registered_at: string;
}

/** How long a registration is kept without a new grant; the client registers again after that. */
const REGISTRATION_MS = 90 * 86_400_000;
/** A metadata document's cache life: its max-age within these bounds, an hour when it names none. */
const CIMD_MIN_MS = 5 * 60_000;
const CIMD_MAX_MS = 86_400_000;
const CIMD_DEFAULT_MS = 3_600_000;
/** The largest metadata document read, and the longest wait for it. */
const CIMD_MAX_BYTES = 16_384;
const CIMD_TIMEOUT_MS = 5_000;
const MAX_REDIRECT_URIS = 10;
const MAX_NAME_LENGTH = 120;

/** An RFC 7591 error: `invalid_client_metadata` or `invalid_redirect_uri`, naming the field. */
export function registrationError(code: "invalid_client_metadata" | "invalid_redirect_uri", message: string) {
  return new GatewayError("invalid_request", message, { code });
}

/** A client's name fit to show: control characters dropped, cut at 120 characters; undefined when nothing is left. */
export function cleanName(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const name = value.replace(/[\p{Cc}\p{Cf}]/gu, "").trim().slice(0, MAX_NAME_LENGTH);
  return name === "" ? undefined : name;
}

/** The redirect URIs of a registration or a document, or the error naming the first that may not be used. */
function redirectUrisOf(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw registrationError("invalid_redirect_uri", "redirect_uris: must be a list of one or more URIs");
  }
  if (value.length > MAX_REDIRECT_URIS) {
    throw registrationError("invalid_redirect_uri", `redirect_uris: at most ${MAX_REDIRECT_URIS} URIs`);
  }
  return value.map((uri, i) => {
    const problem = typeof uri === "string" ? redirectProblem(uri) : "must be a string";
    if (problem) throw registrationError("invalid_redirect_uri", `redirect_uris[${i}]: ${problem}`);
    return uri as string;
  });
}

/** A list field that must hold only some values (grant_types, response_types), or the error naming it. */
function onlyOf(body: Record<string, unknown>, field: string, allowed: readonly string[]): void {
  const value = body[field];
  if (value === undefined) return;
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || !allowed.includes(item))) {
    throw registrationError("invalid_client_metadata", `${field}: only ${allowed.join(" and ")} are supported`);
  }
}

/**
 * Checks what a client says of itself (a registration's body, or a metadata document): its redirect URIs, the
 * grant and response types the gateway offers, and no client authentication but `none` (public clients only;
 * a registration that asks for a secret is answered as a public client, as RFC 7591 lets a server do).
 */
function checkedMetadata(body: Record<string, unknown>, { document }: { document: boolean }) {
  const redirect_uris = redirectUrisOf(body.redirect_uris);
  onlyOf(body, "grant_types", ["authorization_code", "refresh_token"]);
  onlyOf(body, "response_types", ["code"]);
  const method = body.token_endpoint_auth_method;
  if (document && method !== undefined && method !== "none") {
    throw registrationError("invalid_client_metadata", 'token_endpoint_auth_method: only "none" is supported');
  }
  return { redirect_uris, client_name: cleanName(body.client_name) };
}

/** Registers a public client (RFC 7591, section 3); answers what the client is told. */
export async function registerClient(store: Store, body: Record<string, unknown>, now: Date) {
  const { redirect_uris, client_name } = checkedMetadata(body, { document: false });
  const id = `oac_${crypto.getRandomValues(new Uint8Array(16)).toHex()}`;
  const client: OAuthClient = {
    client_id: id,
    client_name: client_name ?? "an unnamed client",
    redirect_uris,
    kind: "registered",
    registered_at: now.toISOString(),
  };
  await store.writes.write(
    "oauth_client",
    () => store.kv.set(["oauth_client", id], client, { expireIn: REGISTRATION_MS }),
  );
  return {
    client,
    answer: {
      client_id: id,
      client_id_issued_at: Math.floor(now.getTime() / 1000),
      client_name: client.client_name,
      redirect_uris,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
  };
}

/** Keeps a registered client another full term, since a grant was just made with it. */
export async function keepClient(store: Store, client: OAuthClient): Promise<void> {
  if (client.kind !== "registered") return;
  const where = ["oauth_client", client.client_id];
  await store.writes.write("oauth_client", () => store.kv.set(where, client, { expireIn: REGISTRATION_MS }));
}

/** Every registered client still kept, oldest first. */
export async function listClients(store: Store): Promise<OAuthClient[]> {
  const clients: OAuthClient[] = [];
  for await (const entry of store.kv.list<OAuthClient>({ prefix: ["oauth_client"] })) clients.push(entry.value);
  return clients.sort((a, b) => a.registered_at.localeCompare(b.registered_at));
}

/** The client a request names, or an `invalid_client` error saying why there is none. */
export async function findClient(
  store: Store,
  clientId: string | null,
  options: { fetch: typeof globalThis.fetch; now: Date },
): Promise<OAuthClient> {
  if (!clientId) throw new GatewayError("invalid_request", "client_id: required", { code: "invalid_request" });
  if (isUrlClientId(clientId)) return await metadataClient(store, clientId, options);
  const found = clientId.length <= MAX_URI_LENGTH && /^oac_[0-9a-f]{32}$/.test(clientId)
    ? (await store.kv.get<OAuthClient>(["oauth_client", clientId])).value
    : null;
  if (!found) {
    throw new GatewayError("authentication", "client_id: no such client; register again", { code: "invalid_client" });
  }
  return found;
}

/** The cache life a response's Cache-Control gives, within the bounds above. */
function cacheMs(headers: Headers): number {
  const maxAge = /max-age=(\d+)/i.exec(headers.get("cache-control") ?? "")?.[1];
  const ms = maxAge === undefined ? CIMD_DEFAULT_MS : Number(maxAge) * 1000;
  return Math.min(CIMD_MAX_MS, Math.max(CIMD_MIN_MS, ms));
}

/** A refusal of a client id metadata document, naming why. */
function badDocument(url: string, why: string): GatewayError {
  return new GatewayError("authentication", `client_id: the metadata document at ${url} ${why}`, {
    code: "invalid_client",
  });
}

/** The body of a document response, or the refusal when it is larger than the limit. */
async function documentText(url: string, res: Response): Promise<string> {
  const reader = res.body?.getReader();
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > CIMD_MAX_BYTES) {
      await reader.cancel();
      throw badDocument(url, `is larger than ${CIMD_MAX_BYTES} bytes`);
    }
    chunks.push(new Uint8Array(value));
  }
  return new TextDecoder().decode(await new Blob(chunks).arrayBuffer());
}

/** A client whose id is the URL of its metadata document: from the cache, else fetched and checked. */
async function metadataClient(
  store: Store,
  url: string,
  { fetch: read, now }: { fetch: typeof globalThis.fetch; now: Date },
): Promise<OAuthClient> {
  const problem = clientIdUrlProblem(url);
  if (problem) throw badDocument(url, `cannot be used: its URL ${problem}`);
  const where = ["oauth_cimd", await hashToken(url)];
  const cached = (await store.kv.get<OAuthClient>(where)).value;
  if (cached) return cached;
  let res: Response;
  try {
    res = await read(url, {
      headers: { accept: "application/json" },
      redirect: "manual",
      signal: AbortSignal.timeout(CIMD_TIMEOUT_MS),
    });
  } catch {
    throw badDocument(url, "could not be fetched");
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw badDocument(url, `answered HTTP ${res.status}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(await documentText(url, res));
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw badDocument(url, "is not JSON");
  }
  if (!isObject(body) || body.client_id !== url) throw badDocument(url, "does not name itself as its client_id");
  let checked;
  try {
    checked = checkedMetadata(body, { document: true });
  } catch (err) {
    throw badDocument(url, `is refused: ${(err as Error).message}`);
  }
  const client: OAuthClient = {
    client_id: url,
    client_name: checked.client_name ?? new URL(url).host,
    redirect_uris: checked.redirect_uris,
    kind: "metadata",
    registered_at: now.toISOString(),
  };
  await store.writes.write("oauth_client", () => store.kv.set(where, client, { expireIn: cacheMs(res.headers) }));
  return client;
}

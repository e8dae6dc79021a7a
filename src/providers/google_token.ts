/**
 * @module Google access tokens from a service-account key file: a JWT signed with RS256 (WebCrypto) is exchanged
 * at the file's `token_uri`; the token is cached, refreshed shortly before it expires, and fetched once for all
 * callers that need it at the same time (token_cache.ts).
 */
import { cachedTokens, requestToken, type TokenSource } from "./token_cache.ts";

/** The fields of a service-account key file that the token exchange uses. */
export interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri: string;
}

/** The scope Vertex AI calls need. */
const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** Google accepts assertions valid for at most an hour. */
const ASSERTION_SECONDS = 3600;

const encoder = new TextEncoder();

/**
 * Reads a service-account key file's text. Errors name the missing field, never a value: the file holds a secret.
 */
export function parseServiceAccount(text: string): ServiceAccount {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new SyntaxError("Cannot read service-account file: it is not JSON");
  }
  const file = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  if (file.type !== undefined && file.type !== "service_account") {
    throw new TypeError(
      `Cannot read service-account file: its type is ${JSON.stringify(file.type)}, not "service_account"`,
    );
  }
  for (const field of ["client_email", "private_key", "token_uri"]) {
    if (typeof file[field] !== "string" || file[field] === "") {
      throw new TypeError(`Cannot read service-account file: "${field}" is missing`);
    }
  }
  if (!URL.canParse(file.token_uri as string)) {
    throw new TypeError(`Cannot read service-account file: "token_uri" is not a URL`);
  }
  return {
    client_email: file.client_email as string,
    private_key: file.private_key as string,
    private_key_id: typeof file.private_key_id === "string" ? file.private_key_id : undefined,
    token_uri: file.token_uri as string,
  };
}

/** Imports a PEM "PRIVATE KEY" (PKCS #8, as key files hold it) for RS256 signing. */
export async function importRsaKey(pem: string): Promise<CryptoKey> {
  const base64 = pem.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, "").replace(/\s+/g, "");
  let der: Uint8Array<ArrayBuffer>;
  try {
    der = Uint8Array.fromBase64(base64);
  } catch {
    throw new TypeError("Cannot read the private key: it is not PEM");
  }
  return await crypto.subtle.importKey("pkcs8", der, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, [
    "sign",
  ]);
}

function base64Url(bytes: Uint8Array): string {
  return bytes.toBase64({ alphabet: "base64url", omitPadding: true });
}

/** A compact JWS of `payload` under `header`, signed with RS256 (`alg` is set here). */
export async function signJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown> | string,
  key: CryptoKey,
): Promise<string> {
  const head = base64Url(encoder.encode(JSON.stringify({ alg: "RS256", ...header })));
  const body = base64Url(encoder.encode(typeof payload === "string" ? payload : JSON.stringify(payload)));
  const input = `${head}.${body}`;
  const signature = await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key, encoder.encode(input));
  return `${input}.${base64Url(new Uint8Array(signature))}`;
}

/** What the token source needs from outside. */
export interface TokenSourceDeps {
  fetch: typeof fetch;
  now(): number;
  scope?: string;
}

/** A token source for one service account. Failures are errors with safe messages: no key, no assertion. */
export function serviceAccountTokens(account: ServiceAccount, deps: TokenSourceDeps): TokenSource {
  let key: Promise<CryptoKey> | undefined;
  return cachedTokens(async () => {
    key ??= importRsaKey(account.private_key);
    const iat = Math.floor(deps.now() / 1000);
    const assertion = await signJwt(
      { typ: "JWT", ...(account.private_key_id ? { kid: account.private_key_id } : {}) },
      {
        iss: account.client_email,
        scope: deps.scope ?? CLOUD_PLATFORM_SCOPE,
        aud: account.token_uri,
        iat,
        exp: iat + ASSERTION_SECONDS,
      },
      await key,
    );
    const grant = new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion });
    return await requestToken(deps.fetch, account.token_uri, grant);
  }, deps.now);
}

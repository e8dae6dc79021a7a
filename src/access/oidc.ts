/**
 * @module The gateway as an OpenID Connect client of the team's identity provider: the issuer's metadata (discovery,
 * read once and kept), exchanging an authorization code (with its PKCE verifier and the client secret) for tokens, the
 * client's other authenticated form posts (the device grant's), and verifying an id_token against the issuer's keys
 * (signature, iss, aud and azp, exp and iat, nonce, email_verified) into the person it names.
 */
// jose is loaded on the first id_token to verify: a gateway without single sign-on never holds it in memory.
import type { JWTPayload } from "jose";

type Jose = typeof import("jose");
import type { OidcConfig } from "../core/config.ts";
import { emailAddress } from "../core/email.ts";
import { GatewayError } from "../core/errors.ts";
import type { Person } from "./roles.ts";

/** What the gateway uses of the issuer's metadata (OpenID Connect Discovery 1.0). */
export interface OidcMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  device_authorization_endpoint?: string;
}

/** What the client needs beyond the config. */
export interface OidcClientOptions {
  /** The client secret (from the env var `client_secret_env` names); undefined when it is not set. */
  clientSecret: string | undefined;
  now(): Date;
  fetch?: typeof fetch;
  /** How long one call to the provider may take. */
  timeoutMs?: number;
}

/** How far the provider's clock may be off the gateway's, for exp, iat and nbf. */
const CLOCK_TOLERANCE_S = 60;

/** A sign-in refused because of what the provider or the browser sent: a clear page, never a 500. */
function refused(message: string): GatewayError {
  return new GatewayError("authentication", message);
}

/** The provider could not be reached or answered nonsense. */
function unreachable(what: string): GatewayError {
  return new GatewayError("upstream", `The identity provider ${what}; try again shortly`);
}

function isUrl(value: unknown): value is string {
  if (typeof value !== "string") return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

/** The OpenID client for one configured provider. */
export function oidcClient(config: OidcConfig, options: OidcClientOptions) {
  const fetcher = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  let metadata: Promise<OidcMetadata> | undefined;
  let keys: ReturnType<Jose["createRemoteJWKSet"]> | undefined;

  async function discover(): Promise<OidcMetadata> {
    const url = `${config.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
    let body: Record<string, unknown>;
    try {
      const res = await fetcher(url, {
        signal: AbortSignal.timeout(timeoutMs),
        headers: { accept: "application/json" },
      });
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`status ${res.status}`);
      }
      body = await res.json();
    } catch {
      throw unreachable("could not be reached for its metadata");
    }
    const { issuer, authorization_endpoint, token_endpoint, jwks_uri } = body;
    // The metadata must be the configured issuer's own (Discovery 1.0, section 4.3), or tokens could name another.
    if (issuer !== config.issuer || ![authorization_endpoint, token_endpoint, jwks_uri].every(isUrl)) {
      throw unreachable(`metadata does not describe the issuer ${config.issuer}`);
    }
    return body as unknown as OidcMetadata;
  }

  /** The issuer's metadata: read once, kept while it is good; a failed read is tried again on the next call. */
  function getMetadata(): Promise<OidcMetadata> {
    metadata ??= discover().catch((err) => {
      metadata = undefined;
      throw err;
    });
    return metadata;
  }

  /**
   * POSTs a form to one of the provider's endpoints as this client (client_secret_basic, RFC 6749 section 2.3.1):
   * the answer's status and JSON body (empty when it is not JSON), or undefined when the provider cannot be reached.
   */
  async function postForm(
    url: string,
    params: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown> } | undefined> {
    if (options.clientSecret === undefined) {
      throw new GatewayError("unavailable", `The client secret is not set (env ${config.client_secret_env})`);
    }
    const basic = btoa(`${encodeURIComponent(config.client_id)}:${encodeURIComponent(options.clientSecret)}`);
    try {
      const res = await fetcher(url, {
        method: "POST",
        signal: AbortSignal.timeout(timeoutMs),
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${basic}` },
        body: new URLSearchParams(params),
      });
      const body = await res.json().catch(() => ({})) as Record<string, unknown>;
      return { status: res.status, body };
    } catch {
      return undefined;
    }
  }

  return {
    metadata: getMetadata,

    /** Where to send the browser to sign in (authorization code flow, PKCE S256; RFC 7636). */
    async authorizationUrl(input: { redirectUri: string; state: string; nonce: string; codeVerifier: string }) {
      const url = new URL((await getMetadata()).authorization_endpoint);
      const params = {
        response_type: "code",
        client_id: config.client_id,
        redirect_uri: input.redirectUri,
        scope: config.scopes.join(" "),
        state: input.state,
        nonce: input.nonce,
        code_challenge: await codeChallenge(input.codeVerifier),
        code_challenge_method: "S256",
      };
      for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
      return url;
    },

    postForm,

    /** Exchanges an authorization code for the provider's answer; only its id_token is used. */
    async exchangeCode(input: { code: string; redirectUri: string; codeVerifier: string }): Promise<string> {
      const meta = await getMetadata();
      const reply = await postForm(meta.token_endpoint, {
        grant_type: "authorization_code",
        code: input.code,
        redirect_uri: input.redirectUri,
        code_verifier: input.codeVerifier,
      });
      if (!reply) throw unreachable("could not be reached to finish the sign-in");
      const { status, body: answer } = reply;
      // A code used twice, expired, or not this client's: the provider's `invalid_grant` (RFC 6749, section 5.2).
      if (status >= 400 && status < 500) {
        throw refused(`The identity provider refused the sign-in (${String(answer.error ?? status)}); sign in again`);
      }
      if (status < 200 || status > 299 || typeof answer.id_token !== "string") {
        throw unreachable("answered the sign-in without an id_token");
      }
      return answer.id_token;
    },

    /**
     * The person an id_token names, once its signature (by the issuer's keys, never `none`), issuer, audience and
     * authorized party, lifetime, issue time and, when given, nonce are checked (OpenID Connect Core 1.0, section
     * 3.1.3.7). An email is taken only when the provider says it is verified (see {@linkcode emailVerified}).
     */
    async verifyIdToken(idToken: string, expect: { nonce?: string } = {}): Promise<SignedIn> {
      const meta = await getMetadata();
      const { createRemoteJWKSet, errors: joseErrors, jwtVerify } = await import("jose");
      keys ??= createRemoteJWKSet(new URL(meta.jwks_uri), { timeoutDuration: timeoutMs });
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(idToken, keys, {
          issuer: config.issuer,
          audience: config.client_id,
          currentDate: options.now(),
          clockTolerance: CLOCK_TOLERANCE_S,
          requiredClaims: ["exp", "iat", "sub"],
        }));
      } catch (err) {
        if (err instanceof joseErrors.JWKSTimeout) throw unreachable("did not answer for its keys");
        throw refused(`The id_token is not valid (${idTokenProblem(err, joseErrors)}); sign in again`);
      }
      const problem = claimProblem(payload, config.client_id, options.now());
      if (problem) throw refused(`The id_token is not valid (claim ${problem}); sign in again`);
      if (expect.nonce !== undefined && payload.nonce !== expect.nonce) {
        throw refused("The id_token is not for this sign-in (nonce); sign in again");
      }
      if (typeof payload.email !== "string" || payload.email.trim() === "") {
        throw refused("The identity provider sent no email for this person (is the email scope granted?)");
      }
      // One person is one address: an email with two @ (whose last part could pass for an allowed domain) or spaces
      // inside is none, and one with spaces around it is the same person as without them.
      const email = emailAddress(payload.email);
      if (email === undefined) throw refused("The identity provider's email for this person is not one address");
      if (!emailVerified(payload.email_verified, config.require_email_verified)) {
        throw refused("The identity provider has not verified this email");
      }
      const groups = Array.isArray(payload.groups) ? payload.groups.filter((g) => typeof g === "string") : [];
      return {
        email,
        ...typeof payload.name === "string" ? { name: payload.name } : {},
        groups,
        groupsClaim: Array.isArray(payload.groups),
      };
    },
  };
}

/** A person as a verified id_token names them, and whether it carried a `groups` claim at all. */
export interface SignedIn extends Person {
  groupsClaim: boolean;
}

/**
 * True when the id_token's `email_verified` lets the email be trusted: only the boolean `true` (a string "true" or
 * "false", a number, anything else is refused), or no claim at all when the operator has said the provider verifies
 * every email it sends without saying so (`require_email_verified: false`).
 */
export function emailVerified(claim: unknown, required: boolean): boolean {
  return claim === true || (claim === undefined && !required);
}

/**
 * What jose leaves to the client among OpenID Connect Core 1.0's checks of an id_token (section 3.1.3.7): an `iat` no
 * later than now and the clock tolerance; with several audiences an `azp`, and any `azp` naming this client. The
 * claim at fault, or undefined.
 */
function claimProblem(payload: JWTPayload, clientId: string, now: Date): string | undefined {
  if (typeof payload.iat !== "number" || payload.iat > now.getTime() / 1000 + CLOCK_TOLERANCE_S) return "iat";
  const several = Array.isArray(payload.aud) && payload.aud.length > 1;
  if ((several || payload.azp !== undefined) && payload.azp !== clientId) return "azp";
  return undefined;
}

/** A random value for state, nonce or a PKCE verifier: 32 bytes, base64url (43 characters, RFC 7636 allows 43-128). */
export function randomToken(): string {
  return crypto.getRandomValues(new Uint8Array(32)).toBase64({ alphabet: "base64url", omitPadding: true });
}

/** The PKCE S256 challenge of a verifier: base64url(SHA-256(verifier)) (RFC 7636, section 4.2). */
export async function codeChallenge(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return digest.toBase64({ alphabet: "base64url", omitPadding: true });
}

/** What was wrong with an id_token, in a few words that hold none of it. */
function idTokenProblem(err: unknown, joseErrors: Jose["errors"]): string {
  if (err instanceof joseErrors.JWTExpired) return "expired";
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `claim ${err.claim}`;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "signature";
  if (err instanceof joseErrors.JWKSNoMatchingKey) return "signed by an unknown key";
  if (err instanceof joseErrors.JOSEAlgNotAllowed || err instanceof joseErrors.JOSENotSupported) return "algorithm";
  return "malformed";
}

/** The OpenID client's type. */
export type OidcClient = ReturnType<typeof oidcClient>;

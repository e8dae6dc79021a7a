/**
 * @module Microsoft Entra ID access tokens for an app registration (OAuth client credentials): the client id and
 * secret exchanged at `{authority}/{tenant}/oauth2/v2.0/token` for a token of one scope, cached, refreshed shortly
 * before it expires and fetched once for all callers that need it at the same time (token_cache.ts).
 */
import { cachedTokens, requestToken, type TokenSource } from "./token_cache.ts";

/** An app registration's credentials and the scope its tokens are for. */
export interface EntraCredentials {
  /** The sign-in host, e.g. https://login.microsoftonline.com (no trailing slash). */
  authority: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** e.g. https://cognitiveservices.azure.com/.default */
  scope: string;
}

/** What the token source needs from outside. */
export interface EntraDeps {
  fetch: typeof fetch;
  now(): number;
}

/** A token source for one app registration. Failures are errors with safe messages: no secret, no address. */
export function entraTokens(credentials: EntraCredentials, deps: EntraDeps): TokenSource {
  const url = `${credentials.authority}/${encodeURIComponent(credentials.tenantId)}/oauth2/v2.0/token`;
  return cachedTokens(
    () =>
      requestToken(
        deps.fetch,
        url,
        new URLSearchParams({
          grant_type: "client_credentials",
          client_id: credentials.clientId,
          client_secret: credentials.clientSecret,
          scope: credentials.scope,
        }),
      ),
    deps.now,
  );
}

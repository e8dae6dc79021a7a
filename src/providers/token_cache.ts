/**
 * @module An OAuth access token held for many requests, whatever credential it is exchanged for (a Google service
 * account's signed assertion, a Microsoft Entra ID client secret): one exchange shared by every caller that needs a
 * token at the same time, the token cached and refreshed shortly before it expires, and the token request itself,
 * whose errors quote nothing secret.
 */
import { GatewayError } from "../core/errors.ts";

/** Hands out a valid access token; `invalidate` drops one the service refused so the next call fetches anew. */
export interface TokenSource {
  token(signal?: AbortSignal): Promise<string>;
  invalidate(token: string): void;
  /** The token held now, if any (for redaction). */
  current(): string[];
}

/** A token as the endpoint issued it. */
export interface IssuedToken {
  token: string;
  lifetimeMs: number;
}

/** A refresh starts this long before expiry (or at half the token's life when that is shorter), as the providers'
 * own libraries do. */
const REFRESH_BEFORE_MS = 5 * 60_000;
/** One token exchange is shared by every caller waiting for it, so it has its own time limit, not a caller's. */
export const EXCHANGE_TIMEOUT_MS = 30_000;

/**
 * POSTs an OAuth token request (`form`, URL-encoded) to `url` and reads the token and its lifetime. Failures are
 * errors whose messages are safe for clients and logs: no address, no secret, only the endpoint's short error codes.
 */
export async function requestToken(
  fetch: typeof globalThis.fetch,
  url: string,
  form: URLSearchParams,
): Promise<IssuedToken> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form,
      signal: AbortSignal.timeout(EXCHANGE_TIMEOUT_MS),
    });
  } catch (err) {
    // The runtime's own wording may quote the endpoint's address; this message reaches clients and logs.
    const timedOut = (err as Error)?.name === "TimeoutError";
    throw new Error(
      timedOut
        ? `The token endpoint did not answer within ${EXCHANGE_TIMEOUT_MS / 1000} s`
        : "The token endpoint could not be reached",
      { cause: err },
    );
  }
  const body = await res.json().catch(() => undefined) as Record<string, unknown> | undefined;
  if (!res.ok || typeof body?.access_token !== "string" || body.access_token === "") {
    throw new Error(`The token endpoint answered ${res.status}${errorCodes(body)}`);
  }
  // Entra's v1 endpoint gave the lifetime as a string of digits; the v2 one and Google give a number.
  const seconds = Number(body.expires_in ?? 3600);
  return { token: body.access_token, lifetimeMs: (Number.isFinite(seconds) && seconds > 0 ? seconds : 3600) * 1000 };
}

/**
 * The short codes of a refused token request, e.g. " (invalid_client, AADSTS7000215)": OAuth's `error`, and the
 * number Entra adds in `error_codes`. Descriptions are left out: they may quote account details.
 */
function errorCodes(body: Record<string, unknown> | undefined): string {
  const codes: string[] = [];
  if (typeof body?.error === "string" && /^[a-z_]{1,40}$/.test(body.error)) codes.push(body.error);
  const entra = Array.isArray(body?.error_codes) ? body.error_codes[0] : undefined;
  if (Number.isSafeInteger(entra)) codes.push(`AADSTS${entra}`);
  return codes.length > 0 ? ` (${codes.join(", ")})` : "";
}

/** A token source over `exchange`, which gets a new token each time it is called. */
export function cachedTokens(exchange: () => Promise<IssuedToken>, now: () => number): TokenSource {
  let current: { token: string; refreshAt: number; expiresAt: number } | undefined;
  let inFlight: Promise<string> | undefined;

  async function fetchToken(): Promise<string> {
    const issued = await exchange();
    const issuedAt = now();
    current = {
      token: issued.token,
      refreshAt: issuedAt + issued.lifetimeMs - Math.min(REFRESH_BEFORE_MS, issued.lifetimeMs / 2),
      expiresAt: issuedAt + issued.lifetimeMs,
    };
    return current.token;
  }

  function refresh(signal?: AbortSignal): Promise<string> {
    inFlight ??= fetchToken().finally(() => inFlight = undefined);
    return untilAborted(inFlight, signal);
  }

  return {
    async token(signal) {
      const at = now();
      if (current && at < current.refreshAt) return current.token;
      if (!current || at >= current.expiresAt) return await refresh(signal);
      // Due for refresh but still valid: a failed refresh keeps the old token working until it expires.
      const held = current.token;
      return await refresh(signal).catch(() => held);
    },
    invalidate(token) {
      if (current?.token === token) current = undefined;
    },
    current: () => current ? [current.token] : [],
  };
}

/**
 * A token for a request to the upstream `name`: a failure to get one is the upstream's (the client's request was
 * fine), named by the upstream and the safe reason; a request the client gave up keeps its own reason.
 */
export async function upstreamToken(name: string, tokens: TokenSource, signal: AbortSignal): Promise<string> {
  try {
    return await tokens.token(signal);
  } catch (err) {
    if (signal.aborted) throw err;
    const reason = err instanceof Error ? err.message : "unknown failure";
    throw new GatewayError("upstream", `Upstream "${name}" could not get an access token: ${reason}`);
  }
}

/** `promise`, or the signal's reason as soon as it aborts: one caller giving up does not cancel the others' wait. */
function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

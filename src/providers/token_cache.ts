/**
 * @module An OAuth access token held for many requests, whatever credential it is exchanged for (a Google service
 * account's signed assertion, a Microsoft Entra ID client secret): one exchange shared by every caller that needs a
 * token at the same time, the token cached and refreshed shortly before it expires, a failed exchange remembered for a
 * few seconds so a refusing endpoint is not asked again by every request, and the token request itself, whose errors
 * quote nothing secret.
 */

/** Hands out a valid access token; `invalidate` drops one the service refused so the next call fetches anew. */
export interface TokenSource {
  /**
   * A token; `waitMs` bounds how long this caller waits for an exchange (the exchange itself goes on for the others).
   * Rejects with a {@linkcode TokenFailure} when none can be had.
   */
  token(signal?: AbortSignal, waitMs?: number): Promise<string>;
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
 * How long a failed exchange stands for every caller: each request meanwhile gets the same failure at once, and the
 * endpoint is asked again only after it (see docs/clouds.md, "Credentials: Microsoft Entra ID").
 */
export const FAILURE_HOLD_MS = 10_000;

/**
 * Why no token could be had, in words safe for clients and logs. `refused` when the endpoint answered and refused the
 * grant (a wrong secret, an unknown app): the credential itself is at fault, not the endpoint's reach.
 */
export class TokenFailure extends Error {
  readonly refused: boolean;
  constructor(message: string, refused: boolean, options?: ErrorOptions) {
    super(message, options);
    this.name = "TokenFailure";
    this.refused = refused;
  }
}

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
    throw new TokenFailure(
      timedOut
        ? `The token endpoint did not answer within ${EXCHANGE_TIMEOUT_MS / 1000} s`
        : "The token endpoint could not be reached",
      false,
      { cause: err },
    );
  }
  const body = await res.json().catch(() => undefined) as Record<string, unknown> | undefined;
  if (!res.ok || typeof body?.access_token !== "string" || body.access_token === "") {
    // A 4xx refuses the grant itself; a 408, a 429, a 5xx or a 200 without a token is the endpoint's own trouble.
    const refused = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
    throw new TokenFailure(`The token endpoint answered ${res.status}${errorCodes(body)}`, refused);
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
  let failed: { error: unknown; until: number } | undefined;

  async function fetchToken(): Promise<string> {
    let issued: IssuedToken;
    try {
      issued = await exchange();
    } catch (err) {
      failed = { error: err, until: now() + FAILURE_HOLD_MS };
      throw err;
    }
    failed = undefined;
    const issuedAt = now();
    current = {
      token: issued.token,
      refreshAt: issuedAt + issued.lifetimeMs - Math.min(REFRESH_BEFORE_MS, issued.lifetimeMs / 2),
      expiresAt: issuedAt + issued.lifetimeMs,
    };
    return current.token;
  }

  function refresh(signal?: AbortSignal, waitMs?: number): Promise<string> {
    if (!inFlight && failed && now() < failed.until) return Promise.reject(failed.error);
    inFlight ??= fetchToken().finally(() => inFlight = undefined);
    return waitFor(inFlight, signal, waitMs);
  }

  return {
    async token(signal, waitMs) {
      const at = now();
      if (current && at < current.refreshAt) return current.token;
      if (!current || at >= current.expiresAt) return await refresh(signal, waitMs);
      // Due for refresh but still valid: a failed refresh keeps the old token working until it expires.
      const held = current.token;
      return await refresh(signal, waitMs).catch(() => held);
    },
    invalidate(token) {
      if (current?.token === token) current = undefined;
    },
    current: () => current ? [current.token] : [],
  };
}

/**
 * `promise`, or the signal's reason as soon as it aborts, or a {@linkcode TokenFailure} once `waitMs` have passed:
 * one caller giving up does not cancel the others' wait.
 */
function waitFor<T>(promise: Promise<T>, signal?: AbortSignal, waitMs?: number): Promise<T> {
  if (!signal && waitMs === undefined) return promise;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settle = <V>(then: (value: V) => void) => (value: V) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      then(value);
    };
    const onAbort = settle(() => reject(signal!.reason));
    signal?.addEventListener("abort", onAbort, { once: true });
    if (waitMs !== undefined) {
      const late = new TokenFailure("The token endpoint did not answer in time", false);
      timer = setTimeout(settle(() => reject(late)), Math.max(0, waitMs));
    }
    promise.then(settle(resolve), settle(reject));
  });
}

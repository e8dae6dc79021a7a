/**
 * @module A request sent with a cloud's OAuth access token (Entra ID for Azure, a service account's for Vertex): the
 * token waited for within one time budget per request, a 401 answered with one fresh token and one more try, and a
 * token that cannot be had reported as the upstream's failure, in words safe for clients and logs.
 */
import { GatewayError } from "../core/errors.ts";
import type { Credential } from "./keyed.ts";
import { EXCHANGE_TIMEOUT_MS, TokenFailure, type TokenSource } from "./token_cache.ts";

/**
 * No token for the upstream: the client's request was fine, the upstream cannot be asked. `refused` when its token
 * endpoint refused the grant (the credential is wrong), else the endpoint could not be reached or did not answer in
 * time. Asking the same upstream again in the same request would only wait again (see docs/routing-and-health.md).
 */
export class TokenUnavailable extends GatewayError {
  readonly refused: boolean;
  constructor(upstream: string, reason: string, refused: boolean, options?: ErrorOptions) {
    super("upstream", `Upstream "${upstream}" could not get an access token: ${reason}`, options);
    this.refused = refused;
  }
}

/** What sending with a token needs of its upstream. */
export interface TokenedUpstream {
  name: string;
  tokens: TokenSource;
  log(line: Record<string, unknown>): void;
}

/** The call a token is for: its signal (the client leaving, the attempt's time limit) and its request id. */
export interface TokenedCall {
  signal: AbortSignal;
  requestId: string;
}

/**
 * A token for the upstream, waited for at most `waitMs`. A failure to get one is a {@linkcode TokenUnavailable}; a
 * wait the client cut short keeps the client's reason, and one the attempt's time limit cut short says so.
 */
export async function upstreamToken(
  upstream: Pick<TokenedUpstream, "name" | "tokens">,
  signal: AbortSignal,
  waitMs = EXCHANGE_TIMEOUT_MS,
): Promise<string> {
  try {
    return await upstream.tokens.token(signal, waitMs);
  } catch (err) {
    if (signal.aborted && !(signal.reason instanceof GatewayError && signal.reason.kind === "timeout")) throw err;
    if (signal.aborted) {
      throw new TokenUnavailable(upstream.name, "The token endpoint did not answer in time", false, { cause: err });
    }
    const refused = err instanceof TokenFailure && err.refused;
    const reason = err instanceof TokenFailure ? err.message : "unknown failure";
    throw new TokenUnavailable(upstream.name, reason, refused, { cause: err });
  }
}

/**
 * `send` with a token. A 401 (the token revoked, or a clock that drifted) gets one fresh token and one more try; the
 * second answer stands. Every wait for a token in one call shares one budget of {@linkcode EXCHANGE_TIMEOUT_MS}, so a
 * token endpoint that hangs holds a request that long at most.
 */
export async function sendWithToken(
  upstream: TokenedUpstream,
  call: TokenedCall,
  send: (token: string) => Promise<Response>,
  budget: { ms: number; now(): number } = { ms: EXCHANGE_TIMEOUT_MS, now: () => performance.now() },
): Promise<Response> {
  const budgetEnds = budget.now() + budget.ms;
  for (let attempt = 0;; attempt++) {
    const token = await upstreamToken(upstream, call.signal, budgetEnds - budget.now());
    const res = await send(token);
    if (res.status !== 401 || attempt > 0) return res;
    await res.body?.cancel();
    upstream.tokens.invalidate(token);
    upstream.log({ request_id: call.requestId, event: "token_refused", upstream: upstream.name });
  }
}

/**
 * A cloud's access tokens as a keyed upstream's credential: each request carries the current token as a bearer, and
 * a 401 gets one fresh token and one more try ({@linkcode sendWithToken}) unless the body can be sent only once (a
 * streamed upload). `secrets` are the values behind the tokens (a client secret), which must never leak either.
 */
export function bearerTokens(upstream: TokenedUpstream, secrets: readonly string[]): Credential {
  return {
    send: async (call, post, once) => {
      if (once) return await post(["authorization", `Bearer ${await upstreamToken(upstream, call.signal)}`]);
      return await sendWithToken(upstream, call, (token) => post(["authorization", `Bearer ${token}`]));
    },
    secrets: () => [...secrets, ...upstream.tokens.current()],
  };
}

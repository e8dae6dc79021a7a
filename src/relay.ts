/**
 * @module The upstream exchange with failover: try the model's upstreams in priority and weight order, skip
 * those cooling down, move on after a connect error, a timeout, 401/403, 429, 5xx or 529 until the attempts or
 * the deadline run out, and never retry once a byte has reached the client.
 */
import type { Config } from "./config.ts";
import { GatewayError } from "./errors.ts";
import type { Exchange } from "./exchange.ts";
import type { Operation } from "./protocols.ts";
import type { Route } from "./routing.ts";
import type { JsonObject, Protocol } from "./types.ts";
import { type AttemptResult, attemptUpstream } from "./upstream/attempt.ts";
import type { HealthBoard } from "./upstream/health.ts";
import { orderCandidates } from "./upstream/select.ts";

/** What the relay needs from the app. */
export interface RelayDeps {
  fetch: typeof fetch;
  now(): Date;
  log(line: Record<string, unknown>): void;
  health: HealthBoard;
  config: Config;
  /** Returns a number in [0, 1) for the weighted choice. */
  random(): number;
  /** Aborted when the process must stop serving; in-flight upstream calls end with it. */
  closing?: AbortSignal;
}

/** One client request to relay. */
export interface RelayRequest {
  routes: readonly Route[];
  client: Protocol;
  operation: Operation;
  body: JsonObject;
  /** The body as the client sent it, forwarded unchanged when the upstream request needs no change. */
  bytes?: Uint8Array<ArrayBuffer>;
  req: Request;
  requestId: string;
  exchange: Exchange;
  /** Called when the response is a stream: the exchange then ends when the stream does, by the returned call. */
  deferFinish(): () => void;
}

/** Waits `ms` unless `signal` aborts first; returns false when aborted. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", stop);
      resolve(true);
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", stop, { once: true });
  });
}

/** The response to a request, after as many upstream attempts as the routing policy allows. */
export async function relay(deps: RelayDeps, call: RelayRequest): Promise<Response> {
  const keyed = call.routes.filter((route) => route.apiKey !== undefined);
  if (keyed.length === 0) {
    throw new GatewayError(
      "unavailable",
      `No upstream is available for model "${call.body.model}": its API key is not configured`,
    );
  }
  const candidates = keyed.length === 1 ? keyed : orderCandidates(keyed, deps.random);
  const started = deps.now().getTime();
  const deadline = started + deps.config.routing.deadline_ms;
  let last: AttemptResult | undefined;
  let next = 0;
  // An upstream that answered 429 or 529 is not asked again at once; only after its retry-after, if any.
  let avoid: string | undefined;
  for (let attempt = 0; attempt < deps.config.routing.max_attempts; attempt++) {
    const remaining = deadline - deps.now().getTime();
    if (remaining <= 0) break;
    let route = pickAvailable(candidates, next, deps.health, avoid);
    if (!route && last?.retryAfterMs !== undefined) {
      // Every candidate is paused; the upstream asked for a pause, and it is honoured when the deadline allows.
      const waitMs = deps.health.waitMs(candidates.map((r) => r.upstream.name));
      if (waitMs < remaining && await pause(waitMs, call.req.signal)) {
        route = pickAvailable(candidates, next, deps.health);
      }
    }
    if (!route) break;
    const name = route.upstream.name;
    next = candidates.indexOf(route) + 1;
    try {
      last = await attemptUpstream(deps, call, route, deadline);
    } catch (err) {
      // A request the upstream never saw (a translation refused it) tells nothing about the upstream.
      deps.health.release(name);
      throw err;
    }
    if (last.outcome === "cancelled") deps.health.release(name);
    call.exchange.attempts.push({ upstream: name, outcome: last.outcome, status: last.status });
    call.exchange.upstream = name;
    if (last.response) return last.response;
    if (!last.retryable || call.req.signal.aborted) break;
    avoid = last.retrySame === false ? name : undefined;
  }
  if (last) {
    // A passthrough error body is returned rather than thrown; the exchange still records the failure's kind.
    if (last.outcome !== "ok") call.exchange.error = last.outcome;
    return last.fail();
  }
  const waitMs = deps.health.waitMs(candidates.map((route) => route.upstream.name));
  throw new GatewayError(
    "unavailable",
    `Every upstream for model "${call.body.model}" is cooling down after failures; try again shortly`,
    { headers: { "retry-after": String(Math.max(1, Math.ceil(waitMs / 1000))) } },
  );
}

/** The first candidate from `start` on (wrapping around), other than `avoid`, that its breaker lets through. */
function pickAvailable(
  candidates: readonly Route[],
  start: number,
  health: HealthBoard,
  avoid?: string,
): Route | undefined {
  for (let i = 0; i < candidates.length; i++) {
    const route = candidates[(start + i) % candidates.length];
    if (route.upstream.name !== avoid && health.tryAcquire(route.upstream.name)) return route;
  }
  return undefined;
}

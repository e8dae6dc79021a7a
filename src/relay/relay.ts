/**
 * @module The upstream exchange with failover: try the model's deployments in priority and weight order (a session's
 * pinned deployment first in its tier), skipping those that are cooling down or paused while another way is open;
 * move on after a connect error, a timeout, 401/403, 429, 5xx or 529 until the attempts or the deadline run out;
 * never retry once a byte has reached the client; and when the last attempt fails, answer with that upstream's own
 * error. The deployment that serves a session is pinned for its next turn.
 */
import type { Config } from "../core/config.ts";
import { clientClosed, GatewayError } from "../core/errors.ts";
import type { Attempt } from "../core/exchange.ts";
import { clientTimeoutMs } from "../core/http.ts";
import { type AttemptPlan, type AttemptResult, attemptUpstream } from "./attempt.ts";
import type { Admission, Deployment, HealthView } from "./health.ts";
import { deploymentOf, type NextAttempt, pickNext } from "./pick.ts";
import type { RelayDeps, RelayRequest } from "./request.ts";
import type { ModelRoute } from "./routing.ts";
import { leadWith, orderCandidates } from "./select.ts";
import { DRAIN_MS } from "./stream.ts";
import { createWatchdog, tickFor, type Watchdog } from "../core/watchdog.ts";

/**
 * The gateway's watchdog for a config: it ticks often enough for the shortest limit a request has (its body's
 * idle limit, and each upstream call's).
 */
export function relayWatchdog(config: Config, now: () => number = Date.now): Watchdog {
  const limits = config.upstreams.flatMap((u) => [u.timeout_ms, u.idle_timeout_ms, u.total_timeout_ms]);
  const own = [config.stream_keepalive_ms, config.body_idle_timeout_ms, DRAIN_MS];
  return createWatchdog({ tickMs: tickFor([...limits, ...own]), now });
}

/** Waits `ms` unless `signal` aborts first; resolves false when it did. The relay's default {@linkcode RelayDeps.sleep}. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
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

/** One attempt at one deployment: a generation's (attempt.ts) unless the request says otherwise (an embedding's). */
export type AttemptRunner = (deps: RelayDeps, call: RelayRequest, plan: AttemptPlan) => Promise<AttemptResult>;

/**
 * The response to a request, after as many upstream attempts as the routing policy allows; `attempt` makes each
 * (a generation's by default).
 */
export function relay(
  deps: RelayDeps,
  call: RelayRequest,
  attempt: AttemptRunner = attemptUpstream,
): Promise<Response> {
  // With tracing off there is no trace, and nothing below does span work.
  const trace = call.exchange.trace;
  if (!trace || (call.operation !== "generate" && call.operation !== "embed")) {
    return relayAttempts(deps, call, attempt);
  }
  return trace.call(call.body, () => relayAttempts(deps, call, attempt));
}

async function relayAttempts(deps: RelayDeps, call: RelayRequest, attempt: AttemptRunner): Promise<Response> {
  const keyed = call.routes.filter((route) => route.transport !== undefined);
  if (keyed.length === 0) {
    throw new GatewayError(
      "unavailable",
      `No upstream is available for model "${call.body.model}": its upstream key is not configured`,
    );
  }
  let candidates = keyed.length === 1 ? keyed : orderCandidates(keyed, deps.random);
  const { affinity } = call;
  // The deployment that holds the session's prompt cache leads its tier; health still decides whether it is taken.
  const pinned = affinity && await deps.pins.find(affinity);
  if (pinned) candidates = leadWith(candidates, (route) => route.upstream.name === pinned);
  const started = deps.now().getTime();
  const deadline = started + deps.config.routing.deadline_ms;
  // A pause is waited out only when the client will still be there: the SDKs say how long they wait.
  const clientDeadline = Math.min(deadline, started + (clientTimeoutMs(call.req.headers) ?? Infinity));
  // The token is the caller whose repeated failures count once (see health.ts, strikes).
  const health = deps.health.forRequest(call.exchange.token_id);
  const tried = new Map<ModelRoute, AttemptResult>();
  let last: AttemptResult | undefined;
  let waited = false;
  for (let tries = 0; tries < deps.config.routing.max_attempts; tries++) {
    const now = deps.now().getTime();
    if (deadline - now <= 0) break;
    const next = pickNext(candidates, tried, {
      health,
      budget: deps.retryBudget,
      now,
      remainingMs: clientDeadline - now,
      mayWait: !waited,
    });
    if (!next) break;
    if (next.waitMs > 0) {
      call.exchange.trace?.waiting(next.waitMs);
      if (!await deps.sleep(next.waitMs, call.req.signal)) break;
      waited = true;
    }
    last = await attemptDeployment(deps, call, { health, next, deadline, attempt });
    tried.set(next.route, last);
    if (last.response) {
      // A passthrough Responses answer keeps the provider's id, and is continued from by that id.
      const served = affinity?.responseId && last.answerId ? { ...affinity, responseId: last.answerId } : affinity;
      if (served) call.exchange.affinity = deps.pins.served(served, next.route.upstream.name, pinned);
      return last.response;
    }
    if (!last.retryable || call.req.signal.aborted) break;
  }
  // A client that left (while a retry-after was waited out, or an attempt was under way) is told nothing more.
  if (call.req.signal.aborted) throw clientClosed();
  if (!last) throw new GatewayError("unavailable", "The request ended before an upstream was tried");
  // A passthrough error body is returned rather than thrown; the exchange still records the failure's kind.
  if (last.outcome !== "ok") call.exchange.error = last.outcome;
  return last.fail();
}

/**
 * What an attempt tells the deployment's health. It is made apart from the attempt: a stream keeps it until it ends,
 * and a closure made inside the attempt would keep the attempt's whole scope with it, the request's body included.
 */
function reporter(health: HealthView, deployment: Deployment, admission: Admission): AttemptPlan["report"] {
  return (event, pauseMs) => {
    if (pauseMs !== undefined) health.pause(deployment, pauseMs);
    health.record(admission, event);
  };
}

/** What an attempt tells the upstream's health of its credential; made apart from the attempt as the reporter is. */
function credentialNote(health: HealthView, upstream: string): AttemptPlan["credential"] {
  return (state) => health.credential(upstream, state);
}

/** One attempt at the chosen deployment, with its outcome reported to the request's view of the board. */
async function attemptDeployment(
  deps: RelayDeps,
  call: RelayRequest,
  { health, next, deadline, attempt: run }: {
    health: HealthView;
    next: NextAttempt;
    deadline: number;
    attempt: AttemptRunner;
  },
): Promise<AttemptResult> {
  const { route } = next;
  const deployment = deploymentOf(route);
  // Without a pass (every way is cooling, or a pause was waited out) the request goes anyway, as no probe.
  const admission = next.admission ?? health.force(deployment);
  const report = reporter(health, deployment, admission);
  const trace = call.exchange.trace;
  const plan = { route, deadline, report, credential: credentialNote(health, route.upstream.name) };
  let result: AttemptResult;
  try {
    result = await (trace
      ? trace.attempt(route.upstream, call.client === route.protocol, () =>
        run(deps, call, plan))
      : run(deps, call, plan));
  } catch (err) {
    // A request the upstream never saw (a translation refused it) tells nothing about the deployment.
    report("neutral");
    trace?.attempted({ upstream: route.upstream.name, outcome: err instanceof GatewayError ? err.kind : "internal" });
    throw err;
  }
  const attempt: Attempt = { upstream: route.upstream.name, outcome: result.outcome, status: result.status };
  if (result.requestId) attempt.request_id = result.requestId;
  trace?.attempted(attempt);
  call.exchange.attempts.push(attempt);
  call.exchange.upstream = route.upstream.name;
  call.exchange.price = route.price;
  return result;
}

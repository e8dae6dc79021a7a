/**
 * @module Which deployment a request's next attempt goes to: one it has not tried before a retry of one it has, both
 * only while their health lets them through, and a retry only within the retry budget. When none may be tried now,
 * the first attempt still goes to the one that is ready first (waiting out a retry-after pause it can afford), so a
 * cooldown reorders and skips but never refuses a request; a later attempt waits out at most one pause.
 */
import type { AttemptResult } from "./outcome.ts";
import { type Admission, type Deployment, deploymentKey, type HealthView, type Standing } from "./health.ts";
import type { RetryBudget } from "./retry_budget.ts";
import type { ModelRoute } from "./routing.ts";

/** The next attempt: where, after how long a wait, and under which pass (none: sent without one, probing nothing). */
export interface NextAttempt {
  route: ModelRoute;
  admission?: Admission;
  waitMs: number;
}

/** What choosing needs besides the candidates. */
export interface PickOptions {
  health: HealthView;
  budget: RetryBudget;
  now: number;
  /** How long the request may still wait before its answer must start. */
  remainingMs: number;
  /** False once the request has waited out one pause: told to wait again, it passes the answer on instead. */
  mayWait: boolean;
}

/** The deployment a route serves. */
export function deploymentOf(route: ModelRoute): Deployment {
  return { upstream: route.upstream.name, model: route.model };
}

/** True when a failed attempt's deployment may be asked again in the same request (a 429 or 529 only after a pause). */
function repeatable(last: AttemptResult): boolean {
  return last.retryable && (last.retrySame !== false || last.retryAfterMs !== undefined);
}

/**
 * Chooses among `candidates` (in try order) given the attempts made so far; undefined when the request should stop
 * and answer with its last attempt. A choice is committed: it is counted in the retry budget.
 */
export function pickNext(
  candidates: readonly ModelRoute[],
  tried: ReadonlyMap<ModelRoute, AttemptResult>,
  options: PickOptions,
): NextAttempt | undefined {
  const { health, budget } = options;
  const fresh = candidates.filter((route) => !tried.has(route));
  const again = candidates.filter((route) => {
    const last = tried.get(route);
    return last !== undefined && repeatable(last) && budget.canRetry(deploymentKey(deploymentOf(route)));
  });
  const commit = (route: ModelRoute, admission: Admission | undefined, waitMs: number): NextAttempt => {
    const key = deploymentKey(deploymentOf(route));
    if (tried.has(route)) budget.withdraw(key);
    else budget.deposit(key);
    return { route, admission, waitMs };
  };
  for (const route of [...fresh, ...again]) {
    const admission = health.admit(deploymentOf(route));
    if (admission) return commit(route, admission, 0);
  }
  // Nothing may be tried now. A request that has an upstream's answer already waits only for a pause it can afford;
  // one that has none goes where the wait is shortest, at once unless a pause there fits its time.
  const first = tried.size === 0;
  if (!first && !options.mayWait) return undefined;
  let best: { route: ModelRoute; standing: Standing } | undefined;
  for (const route of first ? fresh : [...fresh, ...again]) {
    const standing = health.standing(deploymentOf(route));
    if (!first && !standing.pausedOnly) continue;
    if (!best || earlier(standing, best.standing)) best = { route, standing };
  }
  if (!best) return undefined;
  const waitMs = best.standing.pausedOnly ? Math.max(0, best.standing.readyAt - options.now) : 0;
  if (waitMs < options.remainingMs) return commit(best.route, undefined, waitMs);
  return first ? commit(best.route, undefined, 0) : undefined;
}

/** True when `a` is ready before `b`, or as soon and failed less recently. */
function earlier(a: Standing, b: Standing): boolean {
  return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.lastFailureAt < b.lastFailureAt);
}

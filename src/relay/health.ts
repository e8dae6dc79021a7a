/**
 * @module Health per deployment (one public model on one upstream) in one process: a breaker per deployment for
 * failures that are about the model, a breaker per upstream for failures that are about the upstream as a whole, and
 * the pauses upstreams ask for with `retry-after`, kept apart from both. A caller (a token) whose requests fail where
 * others' are served counts once, so no one client can cool a deployment for everyone; and what each upstream made of
 * the gateway's credential the last time it was used. Pure: the clock is injected,
 * the caller holds the board, and nothing here refuses a request: the relay decides what a cooling deployment means.
 */
import {
  type Breaker,
  breakerState,
  closeBreaker,
  failBreaker,
  liftCooldown,
  newBreaker,
  releaseProbe,
} from "./breaker.ts";
import type { BreakerPolicy } from "./breaker.ts";

export type { BreakerPolicy };

/** One public model on one upstream. */
export interface Deployment {
  upstream: string;
  model: string;
}

/** The key a deployment's state is kept under (model ids may contain any character but NUL). */
export function deploymentKey(deployment: Deployment): string {
  return `${deployment.upstream}\u0000${deployment.model}`;
}

/**
 * What an attempt showed. What a failure says decides where it counts: about the model (5xx, 529, 429, a timeout, a
 * stream that failed at once or later) for the deployment only; about the upstream (unreachable, reset before the
 * status line, the gateway's key refused) for every deployment of that upstream.
 */
export type HealthEvent =
  /** The request went well. */
  | "ok"
  /** A stream began: the deployment answers, and the verdict waits for the stream's end. */
  | "started"
  /** The upstream answered, but about the request rather than the model (400, 404, 413, 422). */
  | "answered"
  | "model_failed"
  | "upstream_failed"
  /** Nothing was learned: the client left, the gateway is stopping, or nothing was sent. */
  | "neutral";

/** A request's pass to a deployment: which breakers it is the one trial request (probe) of. */
export interface Admission {
  deployment: Deployment;
  key: string;
  probesUpstream: boolean;
  probesDeployment: boolean;
}

/** Where a deployment stands, for choosing among deployments none of which may be tried now. */
export interface Standing {
  /** When it may be tried in its normal order again (now, when a probe is out). */
  readyAt: number;
  /** True when only an upstream's retry-after pause holds it back. */
  pausedOnly: boolean;
  /** The latest failure of the deployment or its upstream (0: none). */
  lastFailureAt: number;
}

/** A deployment's or an upstream's state as `GET /healthz` shows it. */
export interface HealthState {
  /** `paused` is a deployment waiting out an upstream's retry-after. */
  state: "ok" | "cooling_down" | "probing" | "paused";
  /** ISO time until which it is skipped while another way is open. */
  cooling_until: string | null;
  /** Failing requests in a row. */
  recent_failures: number;
}

/**
 * What an upstream made of the gateway's credential at its last use: not used yet, accepted (any answer but a 401 or
 * 403), refused (a 401 or 403, or its token endpoint refused the grant), or unavailable (its token endpoint could not
 * be reached or did not answer in time).
 */
export type CredentialState = "untried" | "accepted" | "refused" | "unavailable";

/** An upstream's own state with its deployments' beside it. */
export interface UpstreamHealth extends HealthState {
  credential: CredentialState;
  models: Record<string, HealthState>;
}

/** What a relay needs of the board for one request. */
export interface HealthView {
  /** A pass when the deployment may be tried in its normal order now (taking a probe slot when one is due). */
  admit(deployment: Deployment): Admission | undefined;
  /** A pass that probes nothing, for a request that has no better way to go. */
  force(deployment: Deployment): Admission;
  standing(deployment: Deployment): Standing;
  /** Records what the attempt under `admission` showed; each admission's probes are settled by its first event. */
  record(admission: Admission, event: HealthEvent): void;
  /** The upstream asked the deployment to be left alone for `ms` (its retry-after); no failure is implied. */
  pause(deployment: Deployment, ms: number): void;
  /** What `upstream` made of the gateway's credential just now. */
  credential(upstream: string, state: Exclude<CredentialState, "untried">): void;
}

/** The health of every deployment and upstream in one process. */
export interface HealthBoard extends HealthView {
  /**
   * A view for one request, which counts at most one failure against each deployment and each upstream: a request
   * retried three times is one failing request, so no single request trips a breaker by retrying. With `caller` (its
   * token), the deployment's failures count toward a trip once per caller while it serves requests well (see
   * docs/routing-and-health.md, "Health is kept per deployment").
   */
  forRequest(caller?: string): HealthView;
  /** The state of each upstream in `layout` (upstream name -> its public model ids), in that order. */
  snapshot(layout: ReadonlyMap<string, readonly string[]>): Record<string, UpstreamHealth>;
}

interface DeploymentEntry {
  breaker: Breaker;
  /** Until when the upstream asked to be left alone (0: no pause). */
  pausedUntil: number;
  /** When it last answered a request well (0: never). */
  okAt: number;
  /** The callers whose failures have counted since then. */
  struck: Set<string>;
}

/**
 * Whether a failure of `caller`'s request counts toward the deployment's trip. A caller counts once in a run of
 * failures while the deployment has answered some request well within the last cooldown: a second failure of the same
 * caller then says more about what it sends (a body the model cannot take) than about the deployment, and counting it
 * would let one client move everyone's traffic (and prompt caches) elsewhere. A deployment that has answered nothing
 * well for a cooldown counts every failure, as an outage must; so does a request with no caller.
 */
function strikes(entry: DeploymentEntry, caller: string | undefined, at: number, cooldownMs: number): boolean {
  if (caller === undefined || at - entry.okAt >= cooldownMs) return true;
  const first = !entry.struck.has(caller);
  entry.struck.add(caller);
  return first;
}

/** Creates a board; `now` is injected so tests control time. */
export function createHealthBoard(policy: BreakerPolicy, now: () => number): HealthBoard {
  const upstreams = new Map<string, Breaker>();
  const deployments = new Map<string, DeploymentEntry>();
  const credentials = new Map<string, CredentialState>();
  const upstreamOf = (name: string): Breaker => {
    let breaker = upstreams.get(name);
    if (!breaker) upstreams.set(name, breaker = newBreaker());
    return breaker;
  };
  const entryOf = (key: string): DeploymentEntry => {
    let entry = deployments.get(key);
    if (!entry) deployments.set(key, entry = { breaker: newBreaker(), pausedUntil: 0, okAt: 0, struck: new Set() });
    return entry;
  };
  /** When a breaker lets a request through again: 0 when it does now, `at` when a probe is out. */
  const blockedUntil = (breaker: Breaker, at: number): number => {
    const state = breakerState(breaker, at);
    return state === "open" ? breaker.openUntil : state === "probing" ? at : 0;
  };

  function record(admission: Admission, event: HealthEvent, caller: string | undefined): void {
    const upstream = upstreamOf(admission.deployment.upstream);
    const entry = entryOf(admission.key);
    const breaker = entry.breaker;
    const at = now();
    // Every event but the two below shows the upstream answering, which closes its breaker.
    if (event === "upstream_failed") failBreaker(upstream, policy, at, admission.probesUpstream);
    else if (event !== "neutral") closeBreaker(upstream);
    else if (admission.probesUpstream) releaseProbe(upstream);
    if (event === "ok") {
      closeBreaker(breaker);
      entry.okAt = at;
      entry.struck.clear();
    } else if (event === "started") liftCooldown(breaker);
    else if (event === "model_failed") {
      const strike = strikes(entry, caller, at, policy.cooldown_ms);
      failBreaker(breaker, policy, at, admission.probesDeployment, strike);
    } else if (admission.probesDeployment) releaseProbe(breaker);
    admission.probesUpstream = false;
    admission.probesDeployment = false;
  }

  const board: HealthBoard = {
    admit(deployment) {
      const key = deploymentKey(deployment);
      const entry = entryOf(key);
      const upstream = upstreamOf(deployment.upstream);
      const at = now();
      if (entry.pausedUntil > at) return undefined;
      const upstreamState = breakerState(upstream, at);
      const deploymentState = breakerState(entry.breaker, at);
      const passable = (state: string) => state === "closed" || state === "half_open";
      if (!passable(upstreamState) || !passable(deploymentState)) return undefined;
      const admission = {
        deployment,
        key,
        probesUpstream: upstreamState === "half_open",
        probesDeployment: deploymentState === "half_open",
      };
      if (admission.probesUpstream) upstream.probing = true;
      if (admission.probesDeployment) entry.breaker.probing = true;
      return admission;
    },
    force(deployment) {
      return { deployment, key: deploymentKey(deployment), probesUpstream: false, probesDeployment: false };
    },
    standing(deployment) {
      const entry = entryOf(deploymentKey(deployment));
      const upstream = upstreamOf(deployment.upstream);
      const at = now();
      const breakersUntil = Math.max(blockedUntil(upstream, at), blockedUntil(entry.breaker, at));
      const pausedUntil = entry.pausedUntil > at ? entry.pausedUntil : 0;
      return {
        readyAt: Math.max(at, breakersUntil, pausedUntil),
        pausedOnly: breakersUntil === 0 && pausedUntil > 0,
        lastFailureAt: Math.max(upstream.lastFailureAt, entry.breaker.lastFailureAt),
      };
    },
    record: (admission, event) => record(admission, event, undefined),
    pause(deployment, ms) {
      const entry = entryOf(deploymentKey(deployment));
      entry.pausedUntil = Math.max(entry.pausedUntil, now() + ms);
    },
    credential(upstream, state) {
      credentials.set(upstream, state);
    },
    forRequest(caller) {
      const counted = new Set<string>();
      return {
        ...board,
        record(admission, event) {
          // A second failure in one request says nothing new; the answer still shows the upstream works.
          const key = event === "upstream_failed" ? admission.deployment.upstream : admission.key;
          if (event === "model_failed" || event === "upstream_failed") {
            if (counted.has(key)) event = event === "model_failed" ? "answered" : "neutral";
            else counted.add(key);
          }
          record(admission, event, caller);
        },
      };
    },
    snapshot(layout) {
      const at = now();
      const out: Record<string, UpstreamHealth> = {};
      for (const [name, models] of layout) {
        const upstream = stateOf(upstreamOf(name), 0, at);
        const states: Record<string, HealthState> = {};
        for (const model of models) {
          const entry = entryOf(deploymentKey({ upstream: name, model }));
          states[model] = stateOf(entry.breaker, entry.pausedUntil, at);
        }
        out[name] = { ...upstream, credential: credentials.get(name) ?? "untried", models: states };
      }
      return out;
    },
  };
  return board;
}

function stateOf(breaker: Breaker, pausedUntil: number, at: number): HealthState {
  const state = breakerState(breaker, at);
  const until = state === "open" ? breaker.openUntil : pausedUntil > at ? pausedUntil : 0;
  return {
    state: state === "open" ? "cooling_down" : state === "probing" ? "probing" : until ? "paused" : "ok",
    cooling_until: until ? new Date(until).toISOString() : null,
    recent_failures: breaker.failures,
  };
}

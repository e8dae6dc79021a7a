/**
 * @module How one attempt ends: the result the relay reads (a response for the client, or whether the next upstream
 * or a later try may do better), what a failed answer tells the deployment's health, and an upstream's error answer
 * classified: its credentials refused, a body that is not JSON, a Responses-only model on a chat upstream, or an error
 * kept in the client's own protocol when the upstream speaks it.
 */
import { GatewayError, kindForStatus } from "../core/errors.ts";
import { statusForClient } from "../protocols/client_errors.ts";
import { PROTOCOLS } from "../protocols/registry.ts";
import { json } from "../core/http.ts";
import { isObject } from "../core/types.ts";
import type { Refusal } from "../translate/mod.ts";
import type { CredentialState, HealthEvent } from "./health.ts";
import type { RelayDeps, RelayRequest } from "./request.ts";
import type { ModelRoute } from "./routing.ts";
import { relayedHeaders, retryAfterMs } from "./upstream_headers.ts";
import { responsesOnlyAdvice, upstreamCode, upstreamMessage } from "./upstream_refusal.ts";

/** One attempt as the relay planned it. */
export interface AttemptPlan {
  route: ModelRoute;
  /** Epoch milliseconds by which the answer must have started. */
  deadline: number;
  /** Tells the deployment's health what the attempt showed; `pauseMs` is the upstream's retry-after, if any. */
  report(event: HealthEvent, pauseMs?: number): void;
  /** Tells the upstream's health what it made of the gateway's credential. */
  credential(state: Exclude<CredentialState, "untried">): void;
}

/** How one attempt ended. */
export interface AttemptResult {
  upstream: string;
  /** "ok", or the error kind. */
  outcome: string;
  status?: number;
  /** The client's response, when the attempt succeeded. */
  response?: Response;
  /** True when the next upstream may do better. */
  retryable: boolean;
  /** False when the same deployment must not be asked again at once (it said 429 or 529). */
  retrySame?: boolean;
  /** The upstream's own retry-after, in milliseconds. */
  retryAfterMs?: number;
  /** The upstream's own id for the request, when its answer named one. */
  requestId?: string;
  /** What the upstream's error body said, when it refused the request with one. */
  refusal?: Refusal;
  /** The id a passthrough Responses answer has: the provider's, which the client sees and continues from. */
  answerId?: string;
  /** The final answer when no attempt is left: the upstream's error as the client's protocol has it. */
  fail(): Response;
}

/** Statuses after which another upstream (or a later try) may succeed. */
function retryableStatus(status: number): boolean {
  return status === 401 || status === 403 || status === 408 || status === 429 || status >= 500;
}
/** A failed attempt that the next upstream may do better at. */
export function failed(route: ModelRoute, error: GatewayError, extra: Partial<AttemptResult> = {}): AttemptResult {
  return {
    upstream: route.upstream.name,
    outcome: error.kind,
    retryable: true,
    fail() {
      throw error;
    },
    ...extra,
  };
}
/** A stream that failed with its first event: classified like the same error as an HTTP answer. */
export function answerRefused(plan: AttemptPlan, error: GatewayError): AttemptResult {
  noteHealth(plan, error.status, undefined);
  return {
    ...failed(plan.route, error, { status: error.status }),
    retryable: retryableStatus(error.status),
    retrySame: error.status !== 429 && error.status !== 529,
  };
}

/** An upstream's answer that is no success, with what was read of it already (its body parsed when it is JSON). */
export interface FailedAnswer {
  res: Response;
  body: unknown;
  /** True when the upstream speaks the client's protocol, so its error body may pass unchanged. */
  passthrough: boolean;
  secrets: readonly string[];
  /** The upstream, status and request id every result carries. */
  base: Pick<AttemptResult, "upstream" | "status" | "requestId">;
}

/** A failed upstream answer classified for failover and for the client. */
export function failedAnswer(
  deps: RelayDeps,
  call: RelayRequest,
  plan: AttemptPlan,
  { res, body, passthrough, secrets, base }: FailedAnswer,
): AttemptResult {
  const { route } = plan;
  const name = route.upstream.name;
  // Only a failure has the headers it relays and its retry-after read.
  const headers = relayedHeaders(res.headers, secrets);
  if (res.status === 401 || res.status === 403) {
    plan.report("upstream_failed");
    // The same credential would be refused again: another upstream may be tried, this one not (see
    // docs/routing-and-health.md).
    const error = new GatewayError("upstream", `Upstream "${name}" rejected the gateway's credentials`);
    return failed(route, error, { ...base, retrySame: false });
  }
  const retryAfter = retryAfterMs(res.headers, deps.now().getTime());
  if (!isObject(body)) {
    noteHealth(plan, res.ok ? 502 : res.status, retryAfter);
    // The body is not shown: it may be an HTML page naming the upstream. A client error keeps its status; any other
    // answer takes its kind's (502, or 503, 504, 529, 429 for what those mean), so an upstream's garbled 500 is never
    // taken for the gateway's own.
    const clientError = !res.ok && !retryableStatus(res.status);
    const error = new GatewayError(
      res.ok ? "upstream" : kindForStatus(res.status),
      `Upstream "${name}" answered ${res.status} with a body that is not JSON`,
      { status: clientError ? res.status : undefined, headers },
    );
    return {
      ...failed(route, error, base),
      retryable: !clientError,
      retrySame: res.status !== 429 && res.status !== 529,
      retryAfterMs: retryAfter,
    };
  }
  // Here the body is a JSON object and the status is an error.
  const advice = responsesOnlyAdvice(route, res.status, body);
  if (advice) return misrouted(deps, call, route, { advice, base });
  const retryable = retryableStatus(res.status);
  noteHealth(plan, res.status, retryAfter);
  const error = new GatewayError(
    kindForStatus(res.status),
    upstreamMessage(body) ?? `Upstream answered ${res.status}`,
    {
      status: res.status,
      headers,
      code: upstreamCode(body),
    },
  );
  // A well-formed error body from an upstream of the client's own protocol is exactly what that client expects.
  const keep = passthrough && PROTOCOLS[call.client].errors.keeps(body);
  // Anthropic error bodies carry a `request_id` (see docs/protocols.md, "Anthropic Messages"): the upstream's when it
  // named one, else the gateway's, as for the errors Bedrock's and Vertex's transports rebuild in Anthropic's shape.
  const kept = keep && call.client === "anthropic" && typeof body.request_id !== "string"
    ? { ...body, request_id: call.requestId }
    : body;
  const fail = keep ? () => json(kept, { status: statusForClient(res.status, call.client, headers), headers }) : () => {
    throw error;
  };
  const retrySame = res.status !== 429 && res.status !== 529;
  const refusal = { status: res.status, code: upstreamCode(body), message: error.message };
  return { ...base, outcome: error.kind, retryable, retrySame, retryAfterMs: retryAfter, fail, refusal };
}

/**
 * A model the provider serves only through the Responses API, asked through a chat upstream: the config's mistake, not
 * the deployment's trouble. The deployment's health is untouched, the next deployment of the model (one that speaks
 * Responses) is tried, and the client's error, like the log line written once per model, names the fix.
 */
function misrouted(
  deps: RelayDeps,
  call: RelayRequest,
  route: ModelRoute,
  { advice, base }: { advice: string; base: Partial<AttemptResult> },
): AttemptResult {
  const notice = `responses_only:${route.upstream.name}:${route.model}`;
  if (!deps.notices.has(notice)) {
    deps.notices.add(notice);
    deps.log({
      level: "warn",
      event: "responses_only_model",
      upstream: route.upstream.name,
      model: route.model,
      advice,
    });
  }
  const error = new GatewayError(
    "invalid_request",
    `Model "${call.body.model}" is served only through the Responses API, and ${advice} (docs/clients.md)`,
    { param: "model" },
  );
  return { ...failed(route, error, base), outcome: error.kind, retrySame: false };
}

/**
 * What a failed answer says: a status the next try may do better at is about the model (its retry-after, if any, is
 * the upstream's instruction to leave the deployment alone that long); any other is about the request, and only shows
 * that the upstream answers.
 */
function noteHealth(plan: AttemptPlan, status: number, retryAfter: number | undefined): void {
  if (retryableStatus(status)) plan.report("model_failed", retryAfter);
  else plan.report("answered");
}

/**
 * @module Turning one upstream's answer into the client's response: a stream piped as it arrives, a JSON body
 * passed or translated, or a classified failure that says whether the next upstream may do better.
 */
import { GatewayError, kindForStatus, statusForClient } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { textRedactor } from "../core/redact.ts";
import type { StreamStep } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { Refusal, Translation } from "../translate/mod.ts";
import { usageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import type { HealthEvent } from "./health.ts";
import type { RelayDeps, RelayRequest } from "./request.ts";
import type { Route } from "./routing.ts";
import { errorInAnswer } from "./leading_error.ts";
import { relayStream } from "./stream.ts";
import { relayedHeaders, retryAfterMs, upstreamRequestId } from "./upstream_headers.ts";
import { responsesOnlyAdvice, upstreamCode, upstreamMessage } from "./upstream_refusal.ts";

/** One attempt as the relay planned it. */
export interface AttemptPlan {
  route: Route;
  /** Epoch milliseconds by which the answer must have started. */
  deadline: number;
  /** Tells the deployment's health what the attempt showed; `pauseMs` is the upstream's retry-after, if any. */
  report(event: HealthEvent, pauseMs?: number): void;
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

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};
/** Statuses after which another upstream (or a later try) may succeed. */
function retryableStatus(status: number): boolean {
  return status === 401 || status === 403 || status === 408 || status === 429 || status >= 500;
}
/** A failed attempt that the next upstream may do better at. */
export function failed(route: Route, error: GatewayError, extra: Partial<AttemptResult> = {}): AttemptResult {
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

/** Says which upstream reported counts that are not whole numbers of tokens within the bound (see core/usage.ts). */
function invalidUsage(deps: RelayDeps, upstream: string): (fields: string[]) => void {
  return (fields) => deps.log({ level: "warn", event: "upstream_usage_invalid", upstream, fields });
}

/** The client's stream response; the exchange ends, and the upstream call is released, when the stream does. */
export function streamResponse(
  deps: RelayDeps,
  call: RelayRequest,
  plan: AttemptPlan,
  reader: ChunkReader,
  first: Uint8Array,
  options: { step?: StreamStep; upstream: AbortController; totalMs: number; release(): void },
): Response {
  const { route } = plan;
  const name = route.upstream.name;
  // The stream's callbacks hold the exchange, never the request: its body may be a large prompt, and the stream may
  // stay open for minutes.
  const { exchange, client } = call;
  const done = call.deferFinish();
  const meter = usageMeter(route.protocol, invalidUsage(deps, name));
  const secrets = route.transport?.secrets();
  const body = relayStream(reader, first, {
    protocol: client,
    step: options.step,
    meter,
    watchdog: deps.watchdog,
    idleMs: route.upstream.idle_timeout_ms,
    keepAliveMs: deps.config.stream_keepalive_ms,
    totalMs: options.totalMs,
    upstream: options.upstream,
    upstreamName: name,
    secrets,
    hold: call.watch?.events,
    onFirstByte: () => exchange.ttfb_ms ??= deps.now().getTime() - exchange.started_at,
    onEnd(end) {
      options.release();
      if (end.error) exchange.error = end.error.kind;
      // A stream the client left, or that the gateway's own shutdown ended, says nothing about the deployment.
      const untold = end.cancelled || deps.closing?.aborted;
      plan.report(untold ? "neutral" : end.error ? "model_failed" : "ok");
      exchange.usage = meter.usage();
      // The meter read the upstream's events decoded: an id that decodes to a key is not handed to a trace.
      exchange.answer = secrets ? textRedactor(secrets).value(meter.answer()) : meter.answer();
      exchange.usage_complete = !end.error && !end.cancelled;
      done();
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}
/** A complete (non-streamed) upstream answer and how to read it. */
export interface JsonAnswer {
  res: Response;
  text: string;
  translation: Translation;
  /** True when the upstream speaks the client's protocol, so its bodies may pass unchanged. */
  passthrough: boolean;
}

/** The client's response to a complete (non-streamed) upstream answer, or a classified failure. */
export async function finishJson(
  deps: RelayDeps,
  call: RelayRequest,
  plan: AttemptPlan,
  answer: JsonAnswer,
): Promise<AttemptResult> {
  const { route } = plan;
  const { res, translation, passthrough } = answer;
  let { text } = answer;
  const name = route.upstream.name;
  // An upstream answer may quote the key or token it was sent, in an error or anywhere else, even spelled with JSON
  // escapes; the client must never see the gateway's credentials.
  const secrets = route.transport?.secrets() ?? [];
  const redactor = textRedactor(secrets);
  text = redactor.text(text);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const base = { upstream: name, status: res.status, requestId: upstreamRequestId(res.headers, body, secrets) };
  if (res.ok && isObject(body)) {
    const refused = errorInAnswer(text, name, secrets);
    if (refused) return answerRefused(plan, refused);
    if (!passthrough && !isAnswer(body, route.protocol, call.operation)) {
      // A translation of it would be an empty success.
      plan.report("model_failed");
      return failed(route, new GatewayError("upstream", `Upstream "${name}" answered with a body that is not a reply`));
    }
    plan.report("ok");
    call.exchange.trace?.answered(body);
    const meter = usageMeter(route.protocol, invalidUsage(deps, name));
    meter.body(body);
    call.exchange.usage = meter.usage();
    call.exchange.answer = meter.answer();
    call.exchange.usage_complete = true;
    // A translation may put together what the upstream sent in pieces (texts of several parts), so it is searched too.
    const translated = passthrough ? undefined : redactor.value(translation.response(body));
    // A passthrough answer is kept as it is (a Responses answer from a Responses upstream).
    if (call.watch) await call.watch.body(translated ?? body);
    const response = translated
      ? json(translated)
      : new Response(text, { status: res.status, headers: { "content-type": "application/json" } });
    const answerId = passthrough && typeof body.id === "string" ? body.id : undefined;
    return { ...base, outcome: "ok", retryable: false, response, answerId, fail: () => response };
  }
  // What follows is a failure: only now are the headers it relays and its retry-after read.
  const headers = relayedHeaders(res.headers, secrets);
  if (res.status === 401 || res.status === 403) {
    plan.report("upstream_failed");
    return failed(route, new GatewayError("upstream", `Upstream "${name}" rejected the gateway's credentials`), base);
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
  const keep = passthrough && isErrorEnvelope(body, call.client);
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
  route: Route,
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
 * True when `body` has the shape of a reply in the upstream's protocol: a message, or a completion with choices; for
 * a count, the count.
 */
function isAnswer(body: JsonObject, protocol: string, operation: string): boolean {
  if (operation === "count_tokens") return typeof (body.input_tokens ?? body.totalTokens) === "number";
  if (protocol === "gemini") return Array.isArray(body.candidates) || isObject(body.promptFeedback);
  if (protocol === "openai-responses") return Array.isArray(body.output);
  return protocol === "anthropic" ? body.type === "message" : Array.isArray(body.choices);
}

/** True when `body` is an error in `protocol`'s envelope, which its SDKs can read. */
function isErrorEnvelope(body: JsonObject, protocol: string): boolean {
  const error = body.error;
  if (!isObject(error) || typeof error.message !== "string") return false;
  return typeof error.type === "string" && (protocol !== "anthropic" || body.type === "error");
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

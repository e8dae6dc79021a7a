/**
 * @module One upstream attempt: translate the request, send it through the upstream's transport under its timeouts,
 * and classify the answer as a response for the client or a failure that may fail over to the next upstream.
 */
import { clientClosed, GatewayError } from "../core/errors.ts";
import type { JsonObject } from "../core/types.ts";
import { pickTranslator, type TranslateContext, type Translation } from "../translate/mod.ts";
import { finishJson, streamResponse } from "./answer.ts";
import { answerRefused, type AttemptPlan, type AttemptResult, failed } from "./outcome.ts";
import { upstreamRequestId } from "./upstream_headers.ts";
import { type AnswerBytes, readAnswerBytes } from "./answer_body.ts";
import { chunkReader } from "./body_reader.ts";
import { leadingError } from "./leading_error.ts";
import type { RelayDeps, RelayRequest } from "./request.ts";
import type { ModelRoute } from "./routing.ts";
import type { Watched } from "../core/watchdog.ts";
import { TokenUnavailable } from "../providers/token_send.ts";

export type { AttemptPlan, AttemptResult };

/**
 * Sends the request to one deployment and reports what its answer showed to `plan.report`. Never throws for upstream
 * trouble; throws only for a bad client request.
 */
export async function attemptUpstream(deps: RelayDeps, call: RelayRequest, plan: AttemptPlan): Promise<AttemptResult> {
  const { route } = plan;
  const translator = pickTranslator(call.client, route.protocol);
  if (!translator) {
    plan.report("neutral");
    const error = new GatewayError("unavailable", `Model "${call.body.model}" cannot be reached in this protocol`);
    return failed(route, error);
  }
  const translation = translator(translateContext(deps, call, route));
  const result = await sendOnce(deps, call, plan, translation, translation.request(call.body));
  // A refusal over something the translation may leave out (reasoning another deployment made) is tried once more.
  const again = result.refusal && translation.recover?.(result.refusal);
  return again ? await sendOnce(deps, call, plan, translation, again) : result;
}

/** One request to the deployment and its answer, classified. */
async function sendOnce(
  deps: RelayDeps,
  call: RelayRequest,
  plan: AttemptPlan,
  translation: Translation,
  upstreamBody: JsonObject,
): Promise<AttemptResult> {
  const { route, deadline } = plan;
  const name = route.upstream.name;
  // Same protocol both sides: query strings, error bodies and JSON answers pass as the upstream sent them.
  const passthrough = call.client === route.protocol;
  // The relay tries only routes that have a transport.
  const transport = route.transport!;
  const controller = new AbortController();
  const release = forwardAborts([call.req.signal, ...(deps.closing ? [deps.closing] : [])], controller);
  const startedAt = deps.now().getTime();
  // One limit until the answer starts (the total limit only matters for a stream, which checks it itself).
  const headersMs = Math.min(
    route.upstream.timeout_ms,
    route.upstream.total_timeout_ms,
    Math.max(1, deadline - startedAt),
  );
  const answerBy = deps.watchdog.now() + headersMs;
  const waiting: Watched = {
    check(now) {
      if (now >= answerBy) controller.abort(new GatewayError("timeout", `Upstream "${name}" did not answer in time`));
    },
  };
  deps.watchdog.watch(waiting);

  /** A failure without a full answer, while awaiting `stage`: no status line at all points at the whole upstream. */
  const upstreamFailed = (err: unknown, stage: "status" | "body"): AttemptResult => {
    // A client that went away, or a gateway that is shutting down, says nothing about the upstream's health.
    if (call.req.signal.aborted || deps.closing?.aborted) {
      plan.report("neutral");
      const shutdown = deps.closing?.reason;
      const error = call.req.signal.aborted
        ? clientClosed(err)
        : shutdown instanceof GatewayError
        ? shutdown
        : new GatewayError("unavailable", "The gateway is shutting down");
      return { ...failed(route, error), retryable: false };
    }
    const reason = controller.signal.reason;
    const timedOut = controller.signal.aborted && reason instanceof GatewayError;
    // A transport that could not ask the upstream at all (no access token) says why; a fetch error's text names the
    // upstream URL, so only its class reaches the log.
    const tokenless = err instanceof TokenUnavailable;
    const error = tokenless
      ? err
      : timedOut
      ? reason
      : err instanceof GatewayError
      ? err
      : new GatewayError("upstream", `Cannot reach upstream "${name}"`);
    deps.log({
      request_id: call.requestId,
      event: "upstream_error",
      upstream: name,
      error: String((err as Error)?.name),
    });
    // A model may be slow on its own; a connection that fails before any status line fails every model there, and
    // so does a token that cannot be had, which asking again in the same request would only wait for once more.
    if (tokenless) {
      plan.report("upstream_failed");
      plan.credential(err.refused ? "refused" : "unavailable");
      return failed(route, error, { retrySame: false });
    }
    plan.report(timedOut || stage === "body" ? "model_failed" : "upstream_failed");
    return failed(route, error);
  };
  try {
    let res: Response;
    try {
      res = await transport.send({
        operation: call.operation,
        upstreamModel: route.upstreamModel,
        body: upstreamBody,
        bytes: upstreamBody === call.body ? call.bytes : undefined,
        size: call.size,
        clientHeaders: call.req.headers,
        search: passthrough ? searchOf(call.req.url) : "",
        requestId: call.requestId,
        signal: controller.signal,
      });
    } catch (err) {
      release();
      return upstreamFailed(err, "status");
    }
    plan.credential(res.status === 401 || res.status === 403 ? "refused" : "accepted");
    const isStream = (res.headers.get("content-type") ?? "").includes("text/event-stream");
    // Whatever follows, the upstream's own id for the request goes into the log line with the attempt.
    const requestId = upstreamRequestId(res.headers, undefined, transport.secrets());
    const named = (result: AttemptResult): AttemptResult => ({ ...result, requestId: result.requestId ?? requestId });
    if (res.ok && isStream && res.body) {
      // The response is committed only once the first chunk is in hand, so a stream that fails before it fails over.
      const reader = chunkReader(res.body);
      let first: ReadableStreamReadResult<Uint8Array>;
      try {
        first = await reader.read();
      } catch (err) {
        release();
        return named(upstreamFailed(err, "body"));
      }
      if (first.done) {
        release();
        plan.report("model_failed");
        return named(failed(
          route,
          new GatewayError("upstream", `Upstream "${name}" ended the stream before sending anything`),
        ));
      }
      const refused = leadingError(first.value, name, transport.secrets());
      if (refused) {
        // Nothing has reached the client: this is a failed attempt with a real status, not a 200 with an error.
        release();
        reader.cancel().catch(() => {});
        return named(answerRefused(plan, refused));
      }
      deps.watchdog.unwatch(waiting);
      const totalMs = Math.max(1, route.upstream.total_timeout_ms - (deps.now().getTime() - startedAt));
      // Whether the deployment is well is known when the stream ends; until then it is only answering.
      plan.report("started");
      const response = streamResponse(deps, call, plan, reader, first.value, {
        step: translation.stream?.(),
        upstream: controller,
        totalMs,
        release,
      });
      // Only an answer kept for a later request to continue has its id read off the stream (see relay.ts).
      const answerId = passthrough && call.affinity?.responseId ? streamedResponseId(first.value) : undefined;
      return named({
        upstream: name,
        outcome: "ok",
        status: 200,
        retryable: false,
        response,
        answerId,
        fail: () => response,
      });
    }
    let read: AnswerBytes;
    try {
      read = await readAnswerBytes(res, route.upstream.max_answer_bytes, name);
    } catch (err) {
      release();
      if (!(err instanceof GatewayError)) return named(upstreamFailed(err, "body"));
      // An answer past its limit is the request's (the next deployment would answer as much), not the upstream's.
      plan.report("answered");
      return named(failed(route, err, { retryable: false, status: res.status }));
    }
    release();
    return await finishJson(deps, call, plan, { res, read, translation, passthrough });
  } finally {
    deps.watchdog.unwatch(waiting);
  }
}

/**
 * The context of one attempt's translation. It is made apart from the attempt, so a stream's translator, which lives
 * as long as the stream, holds the request's id and not the request itself (its body may be a large prompt).
 */
function translateContext(deps: RelayDeps, call: RelayRequest, route: ModelRoute): TranslateContext {
  const requestId = call.requestId;
  return {
    model: String(call.body.model),
    upstreamModel: route.upstreamModel,
    requestId,
    operation: call.operation,
    responseId: call.responseId,
    now: () => deps.now().getTime(),
    log: (line) => deps.log({ request_id: requestId, ...loggable(line) }),
    defaultMaxTokens: route.upstream.default_max_tokens,
    maxOutputTokens: route.maxOutputTokens,
    maxTokensField: route.upstream.max_tokens_field,
    reasoningEffort: route.upstream.reasoning_effort,
    nativeCustomTools: route.upstream.native_custom_tools,
    leading: call.leading,
    leadingUsage: call.leadingUsage,
  };
}

/**
 * Aborts `controller` when any of `signals` aborts, until the returned release is called. Made apart from the
 * attempt for the same reason as its translation context: a stream keeps this listener for its whole life.
 */
function forwardAborts(signals: AbortSignal[], controller: AbortController): () => void {
  const onAbort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
  for (const signal of signals) signal.addEventListener("abort", onAbort, { once: true });
  return () => {
    for (const signal of signals) signal.removeEventListener("abort", onAbort);
  };
}

/** The id a Responses stream gives its answer, from its first event (`response.created`), when that is in `chunk`. */
function streamedResponseId(chunk: Uint8Array): string | undefined {
  const head = new TextDecoder().decode(chunk.subarray(0, 4096));
  const id = /"response"\s*:\s*\{\s*"id"\s*:\s*"([A-Za-z0-9_-]{1,200})"/.exec(head)?.[1];
  return id;
}

/** The query string of a URL ("" or "?..."), without parsing the whole URL. */
function searchOf(url: string): string {
  const at = url.indexOf("?");
  if (at === -1) return "";
  const hash = url.indexOf("#", at);
  return hash === -1 ? url.slice(at) : url.slice(at, hash);
}

/** Values a translator logs that may be safely written: short identifiers. Anything else may be client input
 * (a pasted token, a prompt) and is logged as "other". */
const SAFE_LOG_VALUE = /^[A-Za-z0-9_.:[\]-]{1,80}$/;

function loggable(line: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(line)) {
    // `event` and `reason` are the gateway's own words; the other values may come from the request.
    const own = key === "event" || key === "reason" || typeof value !== "string";
    out[key] = own || (SAFE_LOG_VALUE.test(value as string) && !(value as string).includes("sk-")) ? value : "other";
  }
  return out;
}

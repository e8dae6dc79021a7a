/**
 * @module Turning one upstream's answer into the client's response: a stream piped as it arrives, or a JSON body
 * passed or translated; an answer that is no success is classified by outcome.ts.
 */
import { GatewayError } from "../core/errors.ts";
import { textRedactor } from "../core/redact.ts";
import type { StreamStep } from "../core/sse.ts";
import { isObject } from "../core/types.ts";
import { PROTOCOLS } from "../protocols/registry.ts";
import type { Translation } from "../translate/mod.ts";
import { usageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import type { RelayDeps, RelayRequest } from "./request.ts";
import { type AnswerBytes, openAnswer, passedResponse, translatedResponse } from "./answer_body.ts";
import { errorInAnswer } from "./leading_error.ts";
import { answerRefused, type AttemptPlan, type AttemptResult, failed, failedAnswer } from "./outcome.ts";
import { relayStream } from "./stream.ts";
import { upstreamRequestId } from "./upstream_headers.ts";

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};
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
  read: AnswerBytes;
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
  const name = route.upstream.name;
  // An upstream answer may quote the key or token it was sent, in an error or anywhere else, even spelled with JSON
  // escapes; the client must never see the gateway's credentials.
  const secrets = route.transport?.secrets() ?? [];
  const redactor = textRedactor(secrets);
  const opened = openAnswer(answer.read, redactor);
  const body = opened.json;
  const base = { upstream: name, status: res.status, requestId: upstreamRequestId(res.headers, body, secrets) };
  if (res.ok && isObject(body)) {
    const refused = errorInAnswer(opened.text, name, secrets);
    if (refused) return answerRefused(plan, refused);
    // A translation holds only the parsed answer (see answer_body.ts).
    if (!passthrough) opened.release();
    if (!passthrough && !PROTOCOLS[route.protocol].isAnswer(body, call.operation)) {
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
    const response = translated ? translatedResponse(translated) : passedResponse(opened.text, res.status);
    const answerId = passthrough && typeof body.id === "string" ? body.id : undefined;
    return { ...base, outcome: "ok", retryable: false, response, answerId, fail: () => response };
  }
  return failedAnswer(deps, call, plan, { res, body, passthrough, secrets, base });
}

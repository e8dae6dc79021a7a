/**
 * @module One embeddings attempt at one deployment: the request cut into the calls its upstream's shape takes, the
 * calls sent a few at a time under the upstream's time limits, and their answers put back in the client's order. The
 * first call that fails ends the attempt (the others are stopped) and is classified as any answer is, so the relay
 * fails over to the next deployment as it does for a generation.
 */
import { clientClosed, GatewayError } from "../core/errors.ts";
import type { Usage } from "../core/exchange.ts";
import { textRedactor } from "../core/redact.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { Watched } from "../core/watchdog.ts";
import type { EmbeddingShape, EmbedPart, EmbedRequest, Vector } from "../protocols/embeddings.ts";
import { TokenUnavailable } from "../providers/token_send.ts";
import { type EmbedResult, mergeParts } from "../translate/embeddings_answer.ts";
import { type EmbedCall, embedCalls, embeddingShapeOf } from "../translate/embeddings_request.ts";
import { type AnswerBytes, openAnswer, readAnswerBytes, translatedResponse } from "./answer_body.ts";
import { type AttemptPlan, type AttemptResult, failed, failedAnswer } from "./outcome.ts";
import type { RelayDeps, RelayRequest } from "./request.ts";
import { passedEmbeddings } from "./embed_passthrough.ts";
import { upstreamRequestId } from "./upstream_headers.ts";

/** The most calls of one request in flight at once: a large request is split, never sent all at once. */
export const EMBED_CONCURRENCY = 4;

/** What an embeddings request is, beside the relay's request. */
export interface EmbedPlan {
  request: EmbedRequest;
  /** The client's name for the vector length, for a refusal to name (`dimensions`, `outputDimensionality`). */
  dimensionsField: string;
  /** The encoding asked of an OpenAI-shaped upstream: the client's, or floats for a client that wants floats only. */
  encoding?: "float" | "base64";
  /** True when the upstream's error bodies are already in the client's shape (and may pass as they are). */
  passes(shape: string): boolean;
  /** The answer in the client's shape. */
  answer(result: EmbedResult): JsonObject;
}

/**
 * A call's outcome: its part of the answer (with the bytes the client gets, when they pass as they came), or the
 * attempt's failure (undefined when a sibling's failure stopped it).
 */
type CallOutcome = { part: EmbedPart; bytes?: Uint8Array } | { failure?: AttemptResult };

/** The attempt function the relay runs for an embeddings request. */
export function embedAttempt(embed: EmbedPlan) {
  return async function attempt(deps: RelayDeps, call: RelayRequest, plan: AttemptPlan): Promise<AttemptResult> {
    const { route } = plan;
    const name = route.upstream.name;
    const shape = embeddingShapeOf(route.upstream.protocol, route.upstreamModel);
    if (!shape) {
      plan.report("neutral");
      return failed(route, new GatewayError("unavailable", `Model "${embed.request.model}" cannot embed here`));
    }
    // A refusal of what this shape cannot take is the client's 400, thrown before any call.
    const calls = embedCalls(embed.request, shape, {
      upstreamModel: route.upstreamModel,
      dimensionsField: embed.dimensionsField,
      encoding: embed.encoding,
    });
    const transport = route.transport!;
    const secrets = transport.secrets();
    // Only a secret made of base64's own characters can hide in a base64 vector (an OpenAI key's "-" cannot).
    const hidden = secrets.filter((secret) => secret.length >= MIN_SECRET && BASE64_TEXT.test(secret));
    const controller = new AbortController();
    const signals = [call.req.signal, ...(deps.closing ? [deps.closing] : [])];
    const onAbort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
    for (const signal of signals) signal.addEventListener("abort", onAbort, { once: true });
    const passthrough = embed.passes(shape.name);
    // One call to an upstream of the client's own shape may answer with bytes that need no change.
    const rule = passthrough && calls.length === 1
      ? { count: calls[0].inputs.length, encoding: embed.request.encoding, model: embed.request.model, secrets }
      : undefined;
    let failure: AttemptResult | undefined;
    let requestId: string | undefined;

    /** A call that got no answer: the client left, the gateway stops, a limit passed, or the upstream is not there. */
    const unanswered = (err: unknown): CallOutcome => {
      if (controller.signal.reason === STOPPED) return {};
      if (call.req.signal.aborted || deps.closing?.aborted) {
        plan.report("neutral");
        const error = call.req.signal.aborted
          ? clientClosed(err)
          : new GatewayError("unavailable", "The gateway is shutting down");
        return { failure: { ...failed(route, error), retryable: false } };
      }
      const reason = controller.signal.reason;
      if (controller.signal.aborted && reason instanceof GatewayError) {
        plan.report("model_failed");
        return { failure: failed(route, reason) };
      }
      deps.log({
        request_id: call.requestId,
        event: "upstream_error",
        upstream: name,
        error: String((err as Error)?.name),
      });
      plan.report("upstream_failed");
      if (err instanceof TokenUnavailable) {
        plan.credential(err.refused ? "refused" : "unavailable");
        return { failure: failed(route, err, { retrySame: false }) };
      }
      return { failure: failed(route, new GatewayError("upstream", `Cannot reach upstream "${name}"`)) };
    };

    async function send(one: EmbedCall): Promise<CallOutcome> {
      const startedAt = deps.now().getTime();
      const limitMs = Math.min(route.upstream.timeout_ms, route.upstream.total_timeout_ms);
      const answerBy = deps.watchdog.now() + Math.max(1, Math.min(limitMs, plan.deadline - startedAt));
      const waiting: Watched = {
        check(now) {
          if (now >= answerBy) {
            controller.abort(new GatewayError("timeout", `Upstream "${name}" did not answer in time`));
          }
        },
      };
      deps.watchdog.watch(waiting);
      try {
        const res = await transport.send({
          operation: "embed",
          upstreamModel: route.upstreamModel,
          body: one.body,
          clientHeaders: call.req.headers,
          search: "",
          requestId: call.requestId,
          signal: controller.signal,
        });
        plan.credential(res.status === 401 || res.status === 403 ? "refused" : "accepted");
        requestId ??= upstreamRequestId(res.headers, undefined, secrets);
        const read = await readAnswerBytes(res, route.upstream.max_answer_bytes, name);
        if (controller.signal.reason === STOPPED) return {};
        if (res.ok) {
          const passed = rule && passedEmbeddings(read.bytes!, res.headers, rule);
          if (passed) return passed;
          const part = readPart(read, { shape: shape!, count: one.inputs.length, headers: res.headers, hidden });
          if (part) return { part };
          plan.report("model_failed");
          const error = new GatewayError("upstream", `Upstream "${name}" answered with a body that is not embeddings`);
          return { failure: failed(route, error) };
        }
        // An error's text may quote a key: it is read only with every form of the upstream's secrets taken out.
        const body = openAnswer(read, textRedactor(secrets)).json;
        const base = { upstream: name, status: res.status, requestId };
        return { failure: failedAnswer(deps, call, plan, { res, body, passthrough, secrets, base }) };
      } catch (err) {
        // An answer past max_answer_bytes is the request's: the next deployment would answer as much.
        if (err instanceof GatewayError && !(err instanceof TokenUnavailable) && !controller.signal.aborted) {
          plan.report("answered");
          return { failure: failed(route, err, { retryable: false }) };
        }
        return unanswered(err);
      } finally {
        deps.watchdog.unwatch(waiting);
      }
    }

    const parts: EmbedPart[] = new Array(calls.length);
    let passedBytes: Uint8Array | undefined;
    let next = 0;
    async function worker(): Promise<void> {
      while (failure === undefined && next < calls.length) {
        const index = next++;
        const outcome = await send(calls[index]);
        if ("part" in outcome) {
          parts[index] = outcome.part;
          passedBytes = outcome.bytes;
        } else if (outcome.failure && failure === undefined) {
          failure = outcome.failure;
          controller.abort(STOPPED);
        }
      }
    }
    try {
      await Promise.all(Array.from({ length: Math.min(EMBED_CONCURRENCY, calls.length) }, worker));
    } finally {
      for (const signal of signals) signal.removeEventListener("abort", onAbort);
    }
    if (failure) return { ...failure, requestId: failure.requestId ?? requestId };
    plan.report("ok");
    const result = mergeParts(calls, parts);
    call.exchange.usage = embedUsage(result.tokens);
    call.exchange.usage_complete = true;
    call.exchange.answer = { model: route.upstreamModel };
    const response = passedBytes
      ? new Response(passedBytes as Uint8Array<ArrayBuffer>, { headers: { "content-type": "application/json" } })
      : answerResponse(embed.answer(result), result);
    return { upstream: name, outcome: "ok", status: 200, retryable: false, requestId, response, fail: () => response };
  };
}

/**
 * The shortest secret looked for in a base64 vector: one of a few characters is found in any long base64 text by
 * chance, and would be no secret a leak could tell.
 */
const MIN_SECRET = 8;

/** Text made only of base64's characters. */
const BASE64_TEXT = /^[A-Za-z0-9+/=]+$/;

/** What stops the calls still running once one has failed (the reason their aborts carry). */
const STOPPED = Object.freeze({ stopped: "another call of the request failed" });

/**
 * One call's successful answer as its part of the result, or undefined when it is not one. Its text is parsed without
 * the redaction an error's gets (a scan of every form of every secret over a large answer): what reaches the client
 * of it is only its vectors, numbers or base64 (checked), and a base64 one that holds an upstream secret (one of the
 * `hidden`, those base64 can hold) is refused.
 */
function readPart(
  read: AnswerBytes,
  { shape, count, headers, hidden }: { shape: EmbeddingShape; count: number; headers: Headers; hidden: string[] },
): EmbedPart | undefined {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(read.bytes));
  } catch {
    return undefined;
  }
  read.bytes = undefined;
  const part = isObject(body) ? shape.read(body, count, headers) : undefined;
  const leaks = (vector: Vector) => typeof vector === "string" && hidden.some((secret) => vector.includes(secret));
  return part && !part.vectors.some(leaks) ? part : undefined;
}

/** The size past which an answer is written out piece by piece rather than as one text (its characters, about). */
const WHOLE_ANSWER_CHARS = 8 * 1024 * 1024;

/**
 * The client's response: an answer of ordinary size as one text (the runtime's serializer is several times faster than
 * writing pieces), a very large one (thousands of long float vectors) piece by piece, so it is never held twice.
 */
function answerResponse(value: JsonObject, result: EmbedResult): Response {
  let chars = 0;
  for (const vector of result.vectors) chars += typeof vector === "string" ? vector.length : vector.length * 24;
  if (chars > WHOLE_ANSWER_CHARS) return translatedResponse(value);
  return new Response(JSON.stringify(value), { headers: { "content-type": "application/json" } });
}

/** An embeddings request's usage: input tokens only. */
function embedUsage(tokens: number): Usage {
  return { input_tokens: tokens, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
}

/**
 * @module What a generate request is made into before its relay, and how it is relayed: for most protocols the checked
 * body as it is, relayed once; for a Responses request the conversation made whole from its stored turns, its answer
 * kept when it is to be stored, and compaction around the relay (the gateway's own, or the provider's on a model
 * served only by Responses upstreams, see compact.ts).
 */
import type { Principal } from "../core/principal.ts";
import type { JsonObject, Operation } from "../core/types.ts";
import { relay } from "../relay/relay.ts";
import type { AnswerWatch, RelayRequest } from "../relay/request.ts";
import type { ModelRoute } from "../relay/routing.ts";
import { type CompactionPlan, relayCompacting } from "./compact.ts";
import type { RequestContext } from "./context.ts";
import { prepareResponses } from "./responses.ts";

/** A request made ready for its relay. */
export interface Turn {
  /** The body as a whole: what the guards and the upstream see it stand for. */
  body: JsonObject;
  /** The body the call carries (a native compaction's leaves out what the provider's endpoint does not take). */
  sent: JsonObject;
  /** How large the body is: the client's, with what a Responses body brought back from stored turns. */
  size: number;
  operation: Operation;
  /** The id a Responses answer takes. */
  responseId?: string;
  /** Keeps the answer once it is complete, when it is to be stored. */
  watch?: AnswerWatch;
  /** Relays the call. */
  relay(call: RelayRequest): Promise<Response>;
}

/** A request relayed as it was checked. */
export function plainTurn(ctx: RequestContext, body: JsonObject, size: number, operation: Operation): Turn {
  return { body, sent: body, size, operation, relay: (call) => relay(ctx.deps, call) };
}

/**
 * A Responses request made whole (see responses.ts) and relayed through compaction when it asks for one: with
 * `compact`, it is POST /v1/responses/compact, answered with a compaction.
 */
export async function responsesTurn(
  ctx: RequestContext,
  request: { principal: Principal; body: JsonObject; size: number; routes: readonly ModelRoute[]; compact: boolean },
): Promise<Turn> {
  const { principal, compact } = request;
  // A model served only by Responses upstreams compacts there, with the provider's own items (see compact.ts).
  const native = request.routes.every((route) => route.protocol === "openai-responses");
  // A Responses request is made whole first, so limits (and the upstream) see everything it stands for.
  const { body, size, watch, plan } = await prepareResponses(ctx, {
    principal,
    body: request.body,
    size: request.size,
    native,
  });
  const compaction: CompactionPlan | undefined = compact && !native ? { kind: "compact" } : plan;
  return {
    body,
    sent: compact && native ? nativeCompactBody(body) : body,
    size,
    operation: compact && native ? "compact" : "generate",
    responseId: newResponseId(),
    watch,
    relay: (call) => compaction ? relayCompacting(ctx, call, { plan: compaction, principal }) : relay(ctx.deps, call),
  };
}

/** A compact request for the provider's own endpoint: none of the create's transport fields it does not take. */
function nativeCompactBody(body: JsonObject): JsonObject {
  const { stream: _stream, store: _store, ...rest } = body;
  return rest;
}

/** A fresh Responses id: stored responses are found by it, so it never repeats. */
function newResponseId(): string {
  return `resp_${crypto.randomUUID().replaceAll("-", "")}`;
}

/**
 * @module The translator interface, and passthrough as its identity: the upstream speaks the client's protocol,
 * so only the model id changes (and only when aliased) and stream bytes are left alone.
 */
import type { Usage } from "../core/exchange.ts";
import type { StreamStep } from "../core/sse.ts";
import type { JsonObject, Operation, UpstreamProtocol } from "../core/types.ts";

/** What a translation knows about the request it serves. */
export interface TranslateContext {
  /** The public model id the client asked for. */
  model: string;
  /** The id the upstream knows the model by. */
  upstreamModel: string;
  requestId: string;
  /** What the client asked for; a count's answer is not a generation's. */
  operation?: Operation;
  /** The id a Responses answer takes; when absent it derives from the request id. */
  responseId?: string;
  /** Milliseconds since the epoch; injected so tests are deterministic. */
  now(): number;
  /** Structured log sink, e.g. for fields dropped because the upstream cannot express them. */
  log(line: Record<string, unknown>): void;
  /** `max_tokens` to send an Anthropic upstream when the client omits it. */
  defaultMaxTokens: number;
  /** The upstream's output ceiling: Claude Code asks for 32k+ tokens, which many OpenAI-compatible models refuse. */
  maxOutputTokens?: number;
  /** Where a chat upstream takes the output limit (OpenAI's reasoning models refuse `max_tokens`). */
  maxTokensField?: "max_tokens" | "max_completion_tokens";
  /** Whether a chat upstream takes `reasoning_effort`; when not, thinking and reasoning requests are dropped. */
  reasoningEffort?: boolean;
  /** Whether a chat upstream takes freeform (`custom`) tools as they are (OpenAI does); when not, they become functions. */
  nativeCustomTools?: boolean;
  /**
   * The upstream a client's Messages request is only a step towards, set by the registry (mod.ts) on the client's half
   * of a pair it composes through Messages: unlike Anthropic, a Responses upstream needs no output limit and takes
   * reasoning beside tool calls made without it.
   */
  towards?: UpstreamProtocol;
  /** Output items a Responses answer starts with, before the model's own. */
  leading?: readonly JsonObject[];
  /** What the call that made the leading items used (a compaction's summary): a Responses answer's usage adds it. */
  leadingUsage?: Usage;
}

/** One request's translation; state shared between request, response and stream lives in its closure. */
export interface Translation {
  /** Client request body to upstream request body. Throws GatewayError("invalid_request") for what cannot be sent. */
  request(body: JsonObject): JsonObject;
  /** Upstream non-streamed success body to client body. */
  response(body: JsonObject): JsonObject;
  /** A fresh stream step; absent for passthrough, whose stream bytes are relayed unchanged. Read after request(). */
  stream?(): StreamStep;
  /**
   * The request to send the same deployment once more in place of one it refused, when the refusal is about
   * something the translation can leave out (reasoning another deployment made); undefined otherwise.
   */
  recover?(refusal: Refusal): JsonObject | undefined;
}

/** An upstream's refusal of a request, as far as a translation needs it. */
export interface Refusal {
  status: number;
  code?: string;
  message: string;
}

/** Builds a translation for one request. */
export type Translator = (ctx: TranslateContext) => Translation;

/** Identity: the upstream speaks the client's protocol. Only the model id changes, and only when aliased. */
export function identity(ctx: TranslateContext): Translation {
  return {
    request(body) {
      return ctx.upstreamModel === body.model ? body : { ...body, model: ctx.upstreamModel };
    },
    response(body) {
      return body;
    },
  };
}

/** A note that part of a request could not cross to the upstream; `reason` is the gateway's own words. */
export interface DropNote {
  field: string;
  reason: string;
  [detail: string]: string;
}

/** Logs a dropped part of a request, always under the one event name `translate_drop`. */
export function logDrop(ctx: TranslateContext, note: DropNote): void {
  ctx.log({ event: "translate_drop", ...note });
}

/**
 * @module Reading token usage from an upstream's answer in its own protocol: a non-streamed body, or the
 * stream's events as they pass (Anthropic usage is cumulative; OpenAI chat sends one usage chunk).
 */
import { byteMarker, type MarkerSet, markerSet } from "../core/byte_search.ts";
import type { AnswerFacts, Usage } from "../core/exchange.ts";
import { saneId } from "../core/http.ts";
import { isResponsesEnd, type SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject, type UpstreamProtocol } from "../core/types.ts";
import { upstreamEventError } from "../core/upstream_error.ts";
import {
  invalidCounts,
  mergeAnthropicUsage,
  recordedUsage,
  type TokenCounts,
  usageFromAnthropic,
  usageFromChat,
  usageFromGemini,
  usageFromResponses,
} from "../core/usage.ts";

/** Collects usage from a stream, event by event. */
export interface UsageMeter {
  /** Looks at one upstream event. */
  event(message: SseMessage): void;
  /** Looks at a non-streamed upstream body. */
  body(body: JsonObject): void;
  /** What has been seen so far, or undefined when nothing was. */
  usage(): Usage | undefined;
  /** The answer's id, model and finish reasons, as far as what was read of it named them. */
  answer(): AnswerFacts | undefined;
  /**
   * Byte strings one of which every event that can change this meter holds (its usage, its state); an event with
   * none of them may pass by unread.
   */
  markers: MarkerSet;
  /**
   * "finished" once the terminal event passed (message_stop, [DONE], response.completed ...), "finishing" once an
   * end would be acceptable (chat's finish chunk), "errored" once the upstream sent its own in-band error, else "open".
   */
  state(): StreamState;
}

/** Where an upstream stream stands. */
export type StreamState = "open" | "finishing" | "finished" | "errored";

/** The events after which a stream in each protocol is complete and nothing more will come. */
const TERMINAL: Record<UpstreamProtocol, (message: SseMessage) => boolean> = {
  anthropic: (m) => m.event === "message_stop" || (m.event === undefined && m.data.includes('"message_stop"')),
  "openai-chat": (m) => m.data === "[DONE]",
  "openai-responses": isResponsesEnd,
  // A Gemini stream simply ends after the chunk with its finishReason.
  gemini: () => false,
};

/** Events after which an end of the stream is acceptable though more may follow (chat's finish chunk: some
 * OpenAI-compatible servers end there without usage or [DONE]). */
const FINISHING: Partial<Record<UpstreamProtocol, (message: SseMessage) => boolean>> = {
  "openai-chat": (m) => /"finish_reason":\s*"/.test(m.data),
  gemini: (m) => /"finishReason":\s*"/.test(m.data),
};

const USAGE_OBJECT = /"usage(Metadata)?"\s*:\s*\{/;

/** What the tests above look for, as bytes: usage, errors (named, or in the payload), and the endings. */
const MARKERS: Record<UpstreamProtocol, MarkerSet> = {
  anthropic: markerSet(["usage", "error", "message_stop", "response.failed"].map(byteMarker)),
  "openai-chat": markerSet(["usage", "error", "[DONE]", "finish_reason", "response.failed"].map(byteMarker)),
  gemini: markerSet(["usageMetadata", "error", "finishReason"].map(byteMarker)),
  // Every lifecycle event holds `"usage": null` and `"error": null`; only the ends and errors can change the meter.
  "openai-responses": markerSet(
    ["response.completed", "response.incomplete", "response.failed", "event: error", '"type":"error"'].map(byteMarker),
  ),
};

function parse(data: string): JsonObject | undefined {
  // Only events with a usage object are parsed; the rest pass by with a cheap test. OpenAI sends `"usage":null` on
  // every chunk of a stream that asked for usage, and those carry nothing.
  if (!USAGE_OBJECT.test(data)) return undefined;
  try {
    const value = JSON.parse(data);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** What a chunk that is not parsed names of its answer, by protocol: its id, its model and its finish reason. */
const NAMES: Partial<Record<UpstreamProtocol, { id: RegExp; model: RegExp; finish: RegExp }>> = {
  "openai-chat": {
    id: /"id"\s*:\s*"([^"]{1,128})"/,
    model: /"model"\s*:\s*"([^"]{1,128})"/,
    finish: /"finish_reason"\s*:\s*"([a-z_]{1,40})"/,
  },
  gemini: {
    id: /"responseId"\s*:\s*"([^"]{1,128})"/,
    model: /"modelVersion"\s*:\s*"([^"]{1,128})"/,
    finish: /"finishReason"\s*:\s*"([A-Z_]{1,40})"/,
  },
};

/**
 * A meter for an upstream speaking `protocol`. A count that is not a whole number of tokens within the bound is cut
 * or read as 0 (see core/usage.ts); `invalid` hears the paths of each usage object that held one, so the caller can
 * name the upstream that sent them.
 */
export function usageMeter(protocol: UpstreamProtocol, invalid?: (fields: string[]) => void): UsageMeter {
  let seen: TokenCounts | undefined;
  let state: StreamState = "open";
  const terminal = TERMINAL[protocol];
  const finishing = FINISHING[protocol];
  const names = NAMES[protocol];
  function check(usage: JsonObject): JsonObject {
    const fields = invalid && invalidCounts(usage);
    if (fields && fields.length > 0) invalid(fields);
    return usage;
  }
  let facts: AnswerFacts | undefined;
  function take(body: JsonObject): void {
    if (protocol === "anthropic") {
      // Later events overwrite earlier ones field by field, as the SDKs do.
      const message = isObject(body.message) ? body.message : body;
      const usage = isObject(message.usage) ? message.usage : body.usage;
      if (isObject(usage)) seen = seen ? mergeAnthropicUsage(seen, check(usage)) : usageFromAnthropic(check(usage));
      note(message.id, message.model, isObject(body.delta) ? body.delta.stop_reason : message.stop_reason);
      return;
    }
    if (protocol === "openai-responses") {
      // A whole answer, or a lifecycle event that carries one; the usage is on the last.
      const response = isObject(body.response) ? body.response : body;
      if (isObject(response.usage)) seen = usageFromResponses(check(response.usage));
      const incomplete = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
      note(response.id, response.model, incomplete ?? response.status);
      return;
    }
    // Each Gemini chunk's usageMetadata stands for the whole answer so far.
    if (protocol === "gemini") {
      if (isObject(body.usageMetadata)) seen = usageFromGemini(check(body.usageMetadata));
      const candidates = Array.isArray(body.candidates) ? body.candidates : [];
      note(body.responseId, body.modelVersion, ...candidates.map((c) => isObject(c) ? c.finishReason : undefined));
      return;
    }
    if (isObject(body.usage)) seen = usageFromChat(check(body.usage));
    const choices = Array.isArray(body.choices) ? body.choices : [];
    note(body.id, body.model, ...choices.map((choice) => isObject(choice) ? choice.finish_reason : undefined));
  }
  /** Keeps what an answer names of itself, when it looks like an id (it is exported with traces). */
  function note(id: unknown, model: unknown, ...reasons: unknown[]): void {
    const sane = (value: unknown) => typeof value === "string" ? saneId(value) : undefined;
    facts ??= {};
    facts.id = sane(id) ?? facts.id;
    facts.model = sane(model) ?? facts.model;
    const named = reasons.map(sane).filter((reason) => reason !== undefined);
    if (named.length > 0) facts.finish_reasons = named;
  }
  return {
    event(message) {
      if (state === "open" || state === "finishing") {
        if (upstreamEventError(message)) state = "errored";
        else if (terminal(message)) state = "finished";
        else if (state === "open" && finishing?.(message)) state = "finishing";
      }
      const body = parse(message.data);
      if (body) take(body);
      else if (names) {
        // Chat and Gemini chunks without usage are not parsed: the first names the answer, the finishing one its reason.
        if (!facts?.id && !facts?.model) note(names.id.exec(message.data)?.[1], names.model.exec(message.data)?.[1]);
        if (state === "finishing") note(undefined, undefined, names.finish.exec(message.data)?.[1]);
      }
    },
    body: take,
    usage: () => seen && recordedUsage(seen),
    answer: () => facts,
    state: () => state,
    markers: MARKERS[protocol],
  };
}
